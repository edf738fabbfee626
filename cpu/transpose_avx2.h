// An 8 × 8 dword transpose in AVX2 registers: 8 tokens' dwords into token lanes (the byte and
// 16-bit token-lane packing) and 8 rows of results into tokens (cpu/lane_tile_store.h).
#pragma once

#include <immintrin.h>

#include "cpu/halves_avx2.h"

namespace zinf::cpu {

#pragma GCC push_options
#pragma GCC target("avx2")

// rows[m] lane t → rows[t] lane m: 32-bit unpacks, 64-bit unpacks, then the 128-bit halves
// paired (cpu/halves_avx2.h). Bits are moved, never converted.
inline __attribute__((always_inline)) void Transpose8(__m256i (&rows)[8]) {
  __m256i t[8], u[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(rows[2 * i], rows[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    rows[j] = LowHalves(u[j], u[4 + j]);
    rows[4 + j] = HighHalves(u[j], u[4 + j]);
  }
}

#pragma GCC pop_options

}  // namespace zinf::cpu
