// What every float dot-product kernel shares so that all of them round alike: the fixed order in
// which 8 lane sums are reduced, and the scalar tail of a row whose length is not a multiple of 8.
#pragma once

#include <cmath>
#include <cstdint>

#include "cpu/matmul.h"

namespace zinf::cpu {

// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
inline float ReduceLanes(const float lanes[8]) {
  const float s04 = lanes[0] + lanes[4], s26 = lanes[2] + lanes[6];
  const float s15 = lanes[1] + lanes[5], s37 = lanes[3] + lanes[7];
  return (s04 + s26) + (s15 + s37);
}

// The same order for 8 double lanes (softmax and norm sums).
inline double ReduceLanes(const double lanes[8]) {
  const double s04 = lanes[0] + lanes[4], s26 = lanes[2] + lanes[6];
  const double s15 = lanes[1] + lanes[5], s37 = lanes[3] + lanes[7];
  return (s04 + s26) + (s15 + s37);
}

// sum plus x[k]·w[row][k] for k in [tail_begin, w.cols), one fma at a time.
inline float AddDotTail(float sum, const float* x, const Weight& w, int64_t row,
                        int64_t tail_begin) {
  for (int64_t k = tail_begin; k < w.cols; ++k) {
    sum = std::fma(x[k], WeightValue(w, row * w.cols + k), sum);
  }
  return sum;
}

}  // namespace zinf::cpu
