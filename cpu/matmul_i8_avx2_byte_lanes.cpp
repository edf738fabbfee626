// MatMulI8Avx2ByteLanes: the activations in the token-lane layout (cpu/q8_token_lanes.h, no
// bias), one 256-bit half holding the (at most 8) tokens' next 4 values. A row's weight dword is
// broadcast against them: maddubs of |x| with w · sign(x) (the sign trick, |x| once per step for
// all the tile's rows) and madd leave each token's 4 products' sum in its lane, and 8 such steps
// its block sum. w · sign(x) wraps for a weight of −128 (zinf's quantizer writes −127..127, other
// writers may not), so a tile that meets one is done again as maddubs of |w| with x · sign(w),
// exact for every int8 (x is −127..127), at one more multiplier-port instruction per step.
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

// Rows [row, row + kRows) × the (at most 8) tokens in the low halves of `lanes`' one group:
// results[r][t] before the bias. kSignOnWeights: the sign trick with |x| (false when a weight was
// −128: the results are then wrong and are computed again with kSignOnWeights false).
template <int kRows, bool kSignOnWeights>
bool LaneTile(const Q8TokenLanes& lanes, const QuantRows& w, int64_t row,
              avx2_lanes::NextTileRequests next, float (&results)[kRows][kLanes]) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i lowest = _mm256_setzero_si256();  // the smallest weight seen, per byte
  const int64_t whole = w.cols / kQ8BlockElements;
  __m256 acc[kRows][1];
  avx2_lanes::SetZero(acc);
  for (int64_t b = 0; b < lanes.blocks; ++b) {
    next.RequestShare();
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
    if constexpr (kSignOnWeights) {
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r)
        lowest = _mm256_min_epi8(lowest,
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(weights[r])));
    }
    const auto* x = reinterpret_cast<const __m256i*>(lanes.block(0, b));
    __m256i sums[kRows][1];
    // Two steps at a time: all eight unrolled, GCC spilled the block sums and accumulators (one
    // Zen 4 core, 2048 × 768 × 128 tokens: 80 against 90 GOP/s).
#pragma GCC unroll 2
    for (int k = 0; k < 8; ++k) {
      const __m256i low = _mm256_load_si256(x + 2 * k);
      const __m256i magnitudes = _mm256_abs_epi8(low);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        int32_t dword;
        std::memcpy(&dword, weights[r] + 4 * k, 4);
        const __m256i wv = _mm256_set1_epi32(dword);
        const __m256i products = _mm256_madd_epi16(
            kSignOnWeights ? _mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(wv, low))
                           : _mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(low, wv)),
            ones);
        sums[r][0] = k == 0 ? products : _mm256_add_epi32(sums[r][0], products);
      }
    }
    avx2_lanes::AddBlockSums(sums, lanes.scales(0, b), acc);
  }
  float row_scales[kRows];
  for (int r = 0; r < kRows; ++r) row_scales[r] = w.i8_scale(row + r);
  avx2_lanes::StoreScaledRows(acc, row_scales, results);
  return !kSignOnWeights ||
         _mm256_movemask_epi8(_mm256_cmpeq_epi8(lowest, _mm256_set1_epi8(-128))) == 0;
}

#pragma GCC pop_options

}  // namespace

void MatMulI8Avx2ByteLanes(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                           const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                           int64_t row_end) {
  const QuantRows rows(w);
  const Q8TokenLanes lanes = PackQ8TokenLanes(xq, num_tokens, kLanes, 0);
  // One group in one half: the walk's few-token tiles (4 block-sum and 4 float accumulators),
  // the rows left over one at a time.
  avx2_lanes::ForEachLaneTile<avx2_lanes::kFewTokenTileRows>(
      lanes, num_tokens, lanes.blocks * Q8TokenLanes::kValueBytes, row_begin, row_end,
      [&]<int kRows, int kHalves>(int64_t row, int64_t group, int tokens) {
        // The tile is where its rows arrive from DRAM, and rows of a few hundred bytes are too
        // short for the hardware's stream prefetchers: the next tile's are requested into L2
        // during this one's pass (one core, 2048 × 768 × 8 tokens from DRAM 57.6 → 82.9 GOP/s;
        // 110M int8 decode of 8 sequences 434-467 → 552-587 tok/s, 1.1B 65-68 → 68-71).
        const avx2_lanes::NextTileRequests next =
            kRows == avx2_lanes::kFewTokenTileRows
                ? avx2_lanes::NextTileRequests(rows, row, kRows, row_end, lanes.blocks)
                : avx2_lanes::NextTileRequests{};
        float results[kRows][kLanes];
        if (!LaneTile<kRows, true>(lanes, rows, row, next, results))
          LaneTile<kRows, false>(lanes, rows, row, {}, results);
        avx2_lanes::StoreLaneResults<kRows>(results, group, tokens, bias, out, out_stride, row);
      });
}

}  // namespace zinf::cpu
