// MatMulI8Avx2Lanes: the activations widened to 16 bits in token lanes (cpu/i16_token_lanes.h),
// each step two values of 16 tokens in two 256-bit halves, and each tile's rows widened once to
// int16. A row's weight pair, broadcast, against 8 tokens' pairs: madd leaves each token's two
// products' sum in its lane, and 16 such steps its exact block sum. Zen 4 issues maddubs, madd,
// sign and abs on the same two ports: the sign trick of 8-bit operands (abs, sign, maddubs, madd
// per 32 products) keeps them 3.5 times as busy as one madd per 16.
#include "cpu/matmul_i8_avx2_lanes.h"

#include <immintrin.h>

#include <cstring>

#include "cpu/avx2_lane_walk.h"
#include "cpu/i16_token_lanes.h"
#include "cpu/matmul_i8_avx2_byte_lanes.h"
#include "cpu/quant_rows.h"
#include "cpu/tiling.h"

namespace zinf::cpu {

namespace {

using avx2_lanes::kLanes;
constexpr int kTileRows = 3;  // 6 block-sum and 6 float accumulators of the 16 ymm registers

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Rows [row, row + rows) of w sign-extended to int16, `stride` values apart (whole blocks, the
// last one padded with zeros), and their scales.
struct WidenedRows {
  const int16_t* values;
  int64_t stride;
  float scales[kTileRows];
};

WidenedRows WidenRows(const QuantRows& w, int64_t blocks, int64_t row, int rows) {
  const int64_t stride = blocks * kQ8BlockElements;
  auto* widened = reinterpret_cast<int16_t*>(
      AlignedThreadScratch<WidenedRows>(static_cast<size_t>(rows * stride * 2)));
  for (int r = 0; r < rows; ++r) {
    const int8_t* values = w.i8_row(row + r);
    int16_t* out = widened + r * stride;
    int64_t c = 0;
    for (; c + 16 <= w.cols; c += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values + c));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + c), _mm256_cvtepi8_epi16(bytes));
    }
    for (; c < w.cols; ++c) out[c] = values[c];
    for (; c < stride; ++c) out[c] = 0;
  }
  WidenedRows result{widened, stride, {}};
  for (int r = 0; r < rows; ++r) result.scales[r] = w.i8_scale(row + r);
  return result;
}

// Rows [0, kRows) of `widened` × lane group `group`, 8 tokens per half (kHalves 1: a group of at
// most 8): results[r][t] before the bias.
template <int kRows, int kHalves>
void LaneTile(const I16TokenLanes& lanes, int64_t group, const WidenedRows& widened,
              avx2_lanes::NextTileRequests next, float (&results)[kRows][kLanes]) {
  __m256 acc[kRows][kHalves];
  avx2_lanes::SetZero(acc);
  for (int64_t b = 0; b < lanes.blocks; ++b) {
    next.RequestShare();
    const auto* x = reinterpret_cast<const __m256i*>(lanes.block(group, b));
    const int16_t* weights = widened.values + b * kQ8BlockElements;
    __m256i sums[kRows][kHalves];
    avx2_lanes::SetZero(sums);
#pragma GCC unroll 4
    for (int j = 0; j < I16TokenLanes::kSteps; ++j) {
      // Both halves spelled out: written as a loop over the halves, GCC's schedule for two ran
      // at ~0.75x (the 8-bit tile this replaced, 2048 × 768 × 128 tokens, one Zen 4 core).
      const __m256i low = _mm256_load_si256(x + 2 * j);
      const __m256i high = kHalves == 2 ? _mm256_load_si256(x + 2 * j + 1) : low;
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        int32_t pair;
        std::memcpy(&pair, weights + r * widened.stride + 2 * j, 4);
        const __m256i wv = _mm256_set1_epi32(pair);
        sums[r][0] = _mm256_add_epi32(sums[r][0], _mm256_madd_epi16(wv, low));
        if constexpr (kHalves == 2)
          sums[r][kHalves - 1] =
              _mm256_add_epi32(sums[r][kHalves - 1], _mm256_madd_epi16(wv, high));
      }
    }
    avx2_lanes::AddBlockSums(sums, lanes.scales(group, b), acc);
  }
  avx2_lanes::StoreScaledRows(acc, widened.scales, results);
}

#pragma GCC pop_options

}  // namespace

void MatMulI8Avx2Lanes(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                       const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                       int64_t row_end) {
  if (num_tokens <= 8) {
    return MatMulI8Avx2ByteLanes(xq, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  }
  const QuantRows rows(w);
  const I16TokenLanes lanes = PackI16TokenLanes(xq, num_tokens);
  // A row tile's rows are widened once for all the groups it passes over.
  WidenedRows widened{};
  int64_t widened_row = -1;
  int widened_count = 0;
  avx2_lanes::ForEachLaneTile<kTileRows>(
      lanes, num_tokens, lanes.blocks * I16TokenLanes::kBlockBytes, row_begin, row_end,
      [&]<int kRows, int kHalves>(int64_t row, int64_t group, int tokens) {
        avx2_lanes::NextTileRequests next;
        if (row != widened_row || kRows != widened_count) {
          // Widening is where a tile's rows arrive from DRAM (it had stalled there: 9.6% of a
          // 2048 × 2048 × 128 profile), once per token block: the tile's first group requests
          // the next tile's rows into L2. One core, 5632 × 2048 from DRAM: 128 tokens 110.5 →
          // 114.9, 32 tokens 100.4 → 107.0 GOP/s (Zen 4, requested all at once).
          next = avx2_lanes::NextTileRequests(rows, row, kRows, row_end, lanes.blocks);
          widened = WidenRows(rows, lanes.blocks, row, kRows);
          widened_row = row;
          widened_count = kRows;
        }
        float results[kRows][kLanes];
        LaneTile<kRows, kHalves>(lanes, group, widened, next, results);
        avx2_lanes::StoreLaneResults<kRows>(results, group, tokens, bias, out, out_stride, row);
      });
}

}  // namespace zinf::cpu
