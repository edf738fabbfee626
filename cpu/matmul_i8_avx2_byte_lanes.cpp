// MatMulI8Avx2ByteLanes: the activations in the token-lane layout (cpu/q8_token_lanes.h, no
// bias), one 256-bit half holding 8 tokens' next 4 values. A row's weight dword is broadcast
// against them: maddubs of |w| with x · sign(w) (the sign trick, exact for −128 weights too) and
// madd leave each token's 4 products' sum in its lane, and 8 such steps its block sum.
#include "cpu/matmul_i8_avx2_byte_lanes.h"

#include <immintrin.h>

#include <cstring>

#include "cpu/avx2_lane_walk.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/quant_rows.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

using avx2_lanes::kLanes;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Rows [row, row + kRows) × the tokens of lane group `group`, 8 per half (kHalves 1: a group
// of at most 8): results[r][t] before the bias.
template <int kRows, int kHalves>
void LaneTile(const Q8TokenLanes& lanes, int64_t group, const QuantRows& w, int64_t row,
              float (&results)[kRows][kLanes]) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t whole = w.cols / kQ8BlockElements;
  __m256 acc[kRows][kHalves];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) acc[r][h] = _mm256_setzero_ps();
  for (int64_t b = 0; b < lanes.blocks; ++b) {
    // A partial last block: rows are not padded, so its bytes are copied (the lanes past the
    // row's end hold zeros, so whatever follows them multiplies to nothing).
    alignas(32) uint8_t padded[kRows][kQ8BlockElements];
    const uint8_t* weights[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      weights[r] = w.row(row + r) + b * kQ8BlockElements;
      if (b == whole) {
        std::memset(padded[r], 0, sizeof(padded[r]));
        std::memcpy(padded[r], weights[r], static_cast<size_t>(w.cols - whole * kQ8BlockElements));
        weights[r] = padded[r];
      }
    }
    const auto* x = reinterpret_cast<const __m256i*>(lanes.block(group, b));
    __m256i sums[kRows][kHalves];
    // Two steps at a time: all eight unrolled, GCC spilled the block sums and accumulators (one
    // Zen 4 core, 2048 × 768 × 128 tokens: 80 against 90 GOP/s; the 2 × 4 tiles 69).
#pragma GCC unroll 2
    for (int k = 0; k < 8; ++k) {
      // Both halves spelled out: written as a loop over the halves, GCC's schedule for two ran
      // at ~0.75x (2048 × 768 × 128 tokens, one Zen 4 core).
      const __m256i low = _mm256_load_si256(x + 2 * k);
      const __m256i high = kHalves == 2 ? _mm256_load_si256(x + 2 * k + 1) : low;
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        int32_t dword;
        std::memcpy(&dword, weights[r] + 4 * k, 4);
        const __m256i wv = _mm256_set1_epi32(dword);
        const __m256i magnitude = _mm256_abs_epi8(wv);
        const __m256i p0 =
            _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(low, wv)), ones);
        sums[r][0] = k == 0 ? p0 : _mm256_add_epi32(sums[r][0], p0);
        if constexpr (kHalves == 2) {
          const __m256i p1 =
              _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(high, wv)), ones);
          sums[r][kHalves - 1] = k == 0 ? p1 : _mm256_add_epi32(sums[r][kHalves - 1], p1);
        }
      }
    }
    const float* scales = lanes.scales(group, b);
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) {
      const __m256 token_scales = _mm256_loadu_ps(scales + 8 * h);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r)
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r][h]), token_scales, acc[r][h]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    const __m256 row_scale = _mm256_set1_ps(w.i8_scale(row + r));
    for (int h = 0; h < kHalves; ++h)
      _mm256_storeu_ps(results[r] + 8 * h, _mm256_mul_ps(acc[r][h], row_scale));
  }
}

#pragma GCC pop_options

}  // namespace

void MatMulI8Avx2ByteLanes(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                           const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                           int64_t row_end) {
  const QuantRows rows(w);
  const Q8TokenLanes lanes = PackQ8TokenLanes(xq, num_tokens, kLanes, 0);
  // 4-row tiles: 4 block-sum and 4 float accumulators for one half-width group.
  avx2_lanes::ForEachLaneTile<4, 4>(
      lanes, num_tokens, lanes.blocks * Q8TokenLanes::kBlockBytes, row_begin, row_end,
      [&]<int kRows, int kHalves>(int64_t row, int64_t group, int tokens) {
        float results[kRows][kLanes];
        LaneTile<kRows, kHalves>(lanes, group, rows, row, results);
        avx2_lanes::StoreLaneResults<kRows>(results, group, tokens, bias, out, out_stride, row);
      });
}

}  // namespace zinf::cpu
