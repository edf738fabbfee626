// A CPU matrix-product rate that depends on how many tokens a product multiplies at once: a few
// are bound by reading the weights, many by arithmetic, and the kernels' tiles fill in between.
// zinf calibrate measures a few sizes; the planner reads any size off them.
#pragma once

#include <utility>
#include <vector>

namespace zinf {

struct TokenRates {
  std::vector<std::pair<int, double>> points;  // (tokens, GFLOP/s): tokens ascending, distinct

  bool empty() const { return points.empty(); }
  // GFLOP/s at `tokens`: linear in log(tokens) between the measured sizes, the nearest size's
  // rate outside them; 0 when nothing was measured.
  double At(double tokens) const;
  // Whether the points are usable: tokens ≥ 1 ascending and distinct, rates positive and finite.
  bool Valid() const;
};

}  // namespace zinf
