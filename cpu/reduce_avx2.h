// ReduceLanes (cpu_dot.h) of eight 8-lane AVX2 accumulators at once, shared by the one-query and
// the block attention loops so that their scores round alike; and the integer twin the quantized
// kernels use for exact block sums.
#pragma once

#include <immintrin.h>

#include "cpu/halves_avx2.h"

namespace zinf::cpu {

#pragma GCC push_options
#pragma GCC target("avx2,fma")

// l_i + l_i+4 of a's 8 lanes in the low 128 bits, of b's in the high.
inline __m256 SumHalves(__m256 a, __m256 b) {
  return _mm256_add_ps(LowHalves(a, b), HighHalves(a, b));
}

// Per 128 bits: (u0 + u2), (u1 + u3), (v0 + v2), (v1 + v3).
inline __m256 SumQuarters(__m256 u, __m256 v) {
  return _mm256_add_ps(_mm256_shuffle_ps(u, v, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm256_shuffle_ps(u, v, _MM_SHUFFLE(3, 2, 3, 2)));
}

// The same three levels of additions as ReduceLanes, each add serving several sums: lane i of
// the result is acc[i]'s sum.
inline __m256 ReduceEight(const __m256 (&acc)[8]) {
  const __m256 low = SumQuarters(SumHalves(acc[0], acc[1]), SumHalves(acc[2], acc[3]));
  const __m256 high = SumQuarters(SumHalves(acc[4], acc[5]), SumHalves(acc[6], acc[7]));
  const __m256 sums = _mm256_add_ps(_mm256_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm256_shuffle_ps(low, high, _MM_SHUFFLE(3, 1, 3, 1)));
  // sums holds 0 2 4 6 | 1 3 5 7.
  return _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Lane i of the result: the sum of v[i]'s eight int32 lanes (integer adds: any order is exact).
// The int8 and int4 kernels' block and group sums.
inline __m256i SumEach(const __m256i (&v)[8]) {
  const __m256i h0 =
      _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i h1 =
      _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  // One Zen 1 core: 24.4 cycles a call with two 128-bit permutes, 18.4 with LowHalves and
  // HighHalves (1.1B int8 decode's one-token tile had spent a third of its time here).
  return _mm256_add_epi32(LowHalves(h0, h1), HighHalves(h0, h1));
}

#pragma GCC pop_options

}  // namespace zinf::cpu
