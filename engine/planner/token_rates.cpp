#include "engine/planner/token_rates.h"

#include <algorithm>
#include <cmath>

namespace zinf {

double TokenRates::At(double tokens) const {
  if (points.empty()) return 0;
  if (tokens <= points.front().first) return points.front().second;
  if (tokens >= points.back().first) return points.back().second;
  const auto upper = std::upper_bound(points.begin(), points.end(), tokens,
                                      [](double t, const auto& point) { return t < point.first; });
  const auto lower = upper - 1;
  const double share =
      std::log(tokens / lower->first) / std::log(static_cast<double>(upper->first) / lower->first);
  return lower->second + share * (upper->second - lower->second);
}

bool TokenRates::Valid() const {
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& [tokens, gflops] = points[i];
    if (tokens < 1 || !(gflops > 0) || !std::isfinite(gflops)) return false;
    if (i > 0 && tokens <= points[i - 1].first) return false;
  }
  return true;
}

}  // namespace zinf
