#include "cpu/norm_rows.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "cpu/dot.h"
#include "cpu/weights_avx2.h"

namespace zinf::cpu {

namespace {

// Adds x[c]² to lanes[c mod 8] for c below the last multiple of 8; returns that multiple. The
// squares of floats are exact in double, so fma and multiply-then-add round alike.
__attribute__((target("avx2,fma"))) int64_t AddSquaresAvx2(const float* x, int64_t cols,
                                                           double lanes[8]) {
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    const __m256 v = _mm256_loadu_ps(x + c);
    const __m256d v_low = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d v_high = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    low = _mm256_fmadd_pd(v_low, v_low, low);
    high = _mm256_fmadd_pd(v_high, v_high, high);
  }
  _mm256_storeu_pd(lanes, low);
  _mm256_storeu_pd(lanes + 4, high);
  return c;
}

template <DType kType>
__attribute__((target("avx2,fma,f16c"))) int64_t ScaleAvx2(const float* x, float scale,
                                                           const void* weight, int64_t cols,
                                                           float* dst) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c), s),
                                            LoadWeights8<kType>(weight, c)));
  }
  return c;
}

int64_t ScaleByWeightsAvx2(const float* x, float scale, const Weight& weight, int64_t cols,
                           float* dst) {
  switch (weight.dtype) {
    case DType::kF32: return ScaleAvx2<DType::kF32>(x, scale, weight.data, cols, dst);
    case DType::kF16: return ScaleAvx2<DType::kF16>(x, scale, weight.data, cols, dst);
    case DType::kBF16: return ScaleAvx2<DType::kBF16>(x, scale, weight.data, cols, dst);
    default: return 0;  // quantised norm weights (none are written) take the portable loop
  }
}

}  // namespace

void RmsNormRow(const float* x, const Weight& weight, float eps, int64_t cols, float* dst,
                CpuIsa isa) {
  double lanes[8] = {};
  int64_t c = 0;
  if (isa >= CpuIsa::kAvx2) {
    c = AddSquaresAvx2(x, cols, lanes);
  } else {
    for (; c + 8 <= cols; c += 8) {
      for (int i = 0; i < 8; ++i) lanes[i] += static_cast<double>(x[c + i]) * x[c + i];
    }
  }
  double sum_squares = ReduceLanes(lanes);
  for (; c < cols; ++c) sum_squares += static_cast<double>(x[c]) * x[c];
  const float scale = static_cast<float>(1.0 / std::sqrt(sum_squares / cols + eps));
  c = 0;
  if (isa >= CpuIsa::kAvx2) c = ScaleByWeightsAvx2(x, scale, weight, cols, dst);
  for (; c < cols; ++c) dst[c] = x[c] * scale * WeightValue(weight, c);
}

}  // namespace zinf::cpu
