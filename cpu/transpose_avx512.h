// A 16 × 16 float transpose in AVX-512 registers, for the AMX kernels whose tiles leave a row's
// 16 tokens in one register while the output wants a token's rows together.
#pragma once

#include <immintrin.h>

namespace zinf::cpu {

#pragma GCC push_options
#pragma GCC target("avx512f")

// rows[m] lane t → columns[t] lane m: unpacks, then 64-bit shuffles, then two rounds of 128-bit
// ones (a 16 × 16 transpose in 64 shuffles, where storing element by element cost 256 scalar
// stores a tile).
inline __attribute__((always_inline)) void Transpose16(__m512 (&rows)[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // u[4i + e], 128-bit chunk c: rows 4i..4i+3 at element 4c + e
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int e = 0; e < 4; ++e) {
    const __m512 p0 = _mm512_shuffle_f32x4(u[e], u[4 + e], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 p1 = _mm512_shuffle_f32x4(u[e], u[4 + e], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 q0 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 q1 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], _MM_SHUFFLE(3, 1, 3, 1));
    rows[e] = _mm512_shuffle_f32x4(p0, q0, _MM_SHUFFLE(2, 0, 2, 0));
    rows[8 + e] = _mm512_shuffle_f32x4(p0, q0, _MM_SHUFFLE(3, 1, 3, 1));
    rows[4 + e] = _mm512_shuffle_f32x4(p1, q1, _MM_SHUFFLE(2, 0, 2, 0));
    rows[12 + e] = _mm512_shuffle_f32x4(p1, q1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

#pragma GCC pop_options

}  // namespace zinf::cpu
