// The 128-bit halves of two AVX2 registers paired up, low with low and high with high, by an
// insert, or an extract and a blend, rather than 128-bit lane permutes: Zen 1 splits vperm2i128 /
// vperm2f128 into 8 micro-ops, one every 3 cycles, where it runs each of the others every cycle.
#pragma once

#include <immintrin.h>

namespace zinf::cpu {

#pragma GCC push_options
#pragma GCC target("avx2")

// [a's low 128 bits, b's low 128 bits]: _mm256_permute2x128_si256(a, b, 0x20).
inline __attribute__((always_inline)) __m256i LowHalves(__m256i a, __m256i b) {
  return _mm256_inserti128_si256(a, _mm256_castsi256_si128(b), 1);
}

// [a's high 128 bits, b's high 128 bits]: _mm256_permute2x128_si256(a, b, 0x31).
inline __attribute__((always_inline)) __m256i HighHalves(__m256i a, __m256i b) {
  return _mm256_blend_epi32(_mm256_castsi128_si256(_mm256_extracti128_si256(a, 1)), b, 0xF0);
}

inline __attribute__((always_inline)) __m256 LowHalves(__m256 a, __m256 b) {
  return _mm256_insertf128_ps(a, _mm256_castps256_ps128(b), 1);
}

inline __attribute__((always_inline)) __m256 HighHalves(__m256 a, __m256 b) {
  return _mm256_blend_ps(_mm256_castps128_ps256(_mm256_extractf128_ps(a, 1)), b, 0xF0);
}

#pragma GCC pop_options

}  // namespace zinf::cpu
