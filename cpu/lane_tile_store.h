// Writing a token-lane tile's results (rows × tokens in lanes) into out[token][row]: 8 rows at a
// time transposed so that each token's 8 outputs go out in one 256-bit store. Element by element
// the tile's 128 scattered stores a token group, each to a line of a token's output row, held the
// store buffer: ~17% of the int8 lane tiles' time in a 110M-shape prefill on Zen 4.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/matmul.h"
#include "cpu/transpose_avx2.h"

namespace zinf::cpu {

#pragma GCC push_options
#pragma GCC target("avx2")

// Tokens [0, tokens) of results (kLanes a multiple of 8), rows [row, row + kRows), plus the bias,
// to out[(token + t) · out_stride + row + i]: results[i][t] + bias(row + i), the same sums
// whichever way they are stored.
template <int kRows, int kLanes>
inline void StoreLaneTile(const float (&results)[kRows][kLanes], int tokens, const Weight& bias,
                          float* out, int64_t out_stride, int64_t row, int64_t token) {
  static_assert(kLanes % 8 == 0);
  if constexpr (kRows == 8) {
    alignas(32) float row_bias[8];
    for (int i = 0; i < 8; ++i) row_bias[i] = bias ? WeightValue(bias, row + i) : 0.0f;
    const __m256 biases = _mm256_load_ps(row_bias);
    for (int first = 0; first < tokens; first += 8) {
      __m256i columns[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        columns[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&results[i][first]));
      Transpose8(columns);  // columns[t]: token first + t's 8 rows
      const int count = tokens - first < 8 ? tokens - first : 8;
      for (int t = 0; t < count; ++t) {
        _mm256_storeu_ps(out + (token + first + t) * out_stride + row,
                         _mm256_add_ps(_mm256_castsi256_ps(columns[t]), biases));
      }
    }
  } else {
    for (int i = 0; i < kRows; ++i) {
      const float b = bias ? WeightValue(bias, row + i) : 0.0f;
      for (int t = 0; t < tokens; ++t) out[(token + t) * out_stride + row + i] = results[i][t] + b;
    }
  }
}

#pragma GCC pop_options

}  // namespace zinf::cpu
