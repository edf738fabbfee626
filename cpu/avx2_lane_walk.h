// The walk the AVX2 token-lane kernels (cpu/matmul_i8_avx2_lanes.cpp, cpu/matmul_q4_avx2_lanes.cpp)
// share: row tiles over groups of 16 tokens in lanes, a group of at most 8 in one 256-bit half,
// and the tiles' results stored with the bias.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/matmul.h"
#include "cpu/prefetch_region.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/quant_rows.h"
#include "cpu/tiling.h"
#include "engine/backend.h"

namespace zinf::cpu::avx2_lanes {

inline constexpr int kLanes = Q8TokenLanes::kLanes;
// The rows of a tile in a call of at most 8 tokens (one half-width group): 4 fit the registers.
inline constexpr int kFewTokenTileRows = 4;

// How many of a call's num_tokens, those past its last whole lane half (8 tokens), the kernels
// leave to the one-token tiles in a pass of their own: 1..max_tail of them in a call of more than
// 8 (a lane half for a few tokens costs most of a full one), else none.
inline int64_t OneTokenTail(int64_t num_tokens, int64_t max_tail) {
  const int64_t past_halves = num_tokens % 8;
  return num_tokens > 8 && past_halves <= max_tail ? past_halves : 0;
}

// The rows of the row tile after the current one (and the int4 rows' parameters), which the
// current tile's pass requests into L2 a share per block (LineRequests), so that they arrive from
// DRAM while its products run. Asked for all at once at the tile's start, as they had been, a few
// hundred lines outran what Zen 1 keeps in flight: one Zen 1 core from DRAM (alternating runs,
// median ratio of 5), int8 2048 × 5632 × 128 tokens 1.07×, 8 tokens 1.06×; int4 8 tokens
// 1.05-1.12×, 128 tokens 1.02-1.03×; int8 2048 × 2048 × 128 level. The shares are spread over
// the first half of the pass (over all of it measured level on Zen 1), so that the last lines are
// not asked for just before the next tile reads them.
class NextTileRequests {
 public:
  NextTileRequests() = default;  // requests nothing

  // The requests for the tile after rows [row, row + rows), when a whole tile of them lies before
  // row_end (none otherwise), for a pass that calls RequestShare `calls` times; with_params: the
  // int4 rows' scale and minimum pairs too.
  NextTileRequests(const QuantRows& w, int64_t row, int rows, int64_t row_end, int64_t calls,
                   bool with_params = false) {
    if (row + 2 * rows > row_end) return;
    const int64_t shares = std::max<int64_t>(calls / 2, 1);
    rows_ = LineRequests(w.row(row + rows), rows * w.row_bytes, 0, 1, shares);
    if (with_params)
      params_ = LineRequests(w.q4_params(row + rows), rows * w.groups * 4, 0, 1, shares);
  }

  // The next share of the lines (none once all are asked for).
  __attribute__((always_inline)) void RequestShare() {
    rows_.RequestShare();
    params_.RequestShare();
  }

 private:
  LineRequests rows_, params_;
};

// Calls tile.template operator()<kRows, kHalves>(row, group, tokens) for every tile of rows
// [row_begin, row_end) × the lane groups of `lanes` (num_tokens tokens; Q8TokenLanes or
// I16TokenLanes): kTileRows rows, then one at a time, the groups in blocks that stay in L2
// (group_bytes each) while every row tile passes over them; kHalves 1 for a group of at most 8
// tokens. A call of at most 8 tokens takes kFewTokenTileRows-row tiles.
template <int kTileRows, typename Lanes, typename Tile>
void ForEachLaneTile(const Lanes& lanes, int64_t num_tokens, int64_t group_bytes, int64_t row_begin,
                     int64_t row_end, Tile&& tile) {
  auto rows_over = [&]<int kRows>(int64_t row, int64_t first, int64_t last) {
    for (int64_t g = first; g < last; ++g) {
      const int tokens = lanes.tokens_in(g, num_tokens);
      if (tokens <= 8) {
        tile.template operator()<kRows, 1>(row, g, tokens);
      } else {
        tile.template operator()<kRows, 2>(row, g, tokens);
      }
    }
  };
  if (num_tokens <= 8) {
    int64_t r = row_begin;
    for (; r + kFewTokenTileRows <= row_end; r += kFewTokenTileRows)
      rows_over.template operator()<kFewTokenTileRows>(r, 0, 1);
    for (; r < row_end; ++r) rows_over.template operator()<1>(r, 0, 1);
    return;
  }
  const int64_t per_block = LaneGroupsPerTokenBlock(group_bytes);
  for (int64_t first = 0; first < lanes.groups; first += per_block) {
    const int64_t last = std::min(lanes.groups, first + per_block);
    int64_t r = row_begin;
    for (; r + kTileRows <= row_end; r += kTileRows)
      rows_over.template operator()<kTileRows>(r, first, last);
    for (; r < row_end; ++r) rows_over.template operator()<1>(r, first, last);
  }
}

// A tile's accumulators, every register set to zero.
template <typename Vector, int kRows, int kHalves>
__attribute__((target("avx2"), always_inline)) inline void SetZero(
    Vector (&accumulators)[kRows][kHalves]) {
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) accumulators[r][h] = Vector{};
}

// The int8 tiles' float step per block, in the portable kernel's order: acc[r][h] += the block's
// exact sum (sums[r][h], 8 tokens per half) times its tokens' scales.
template <int kRows, int kHalves>
__attribute__((target("avx2,fma"), always_inline)) inline void AddBlockSums(
    const __m256i (&sums)[kRows][kHalves], const float* token_scales,
    __m256 (&acc)[kRows][kHalves]) {
#pragma GCC unroll 2
  for (int h = 0; h < kHalves; ++h) {
    const __m256 scales = _mm256_loadu_ps(token_scales + 8 * h);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
      acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r][h]), scales, acc[r][h]);
  }
}

// results[r][t] = acc[r][t] times row r's scale (the int8 tiles' last step).
template <int kRows, int kHalves>
__attribute__((target("avx2"), always_inline)) inline void StoreScaledRows(
    const __m256 (&acc)[kRows][kHalves], const float* row_scales, float (&results)[kRows][kLanes]) {
  for (int r = 0; r < kRows; ++r) {
    const __m256 scale = _mm256_set1_ps(row_scales[r]);
    for (int h = 0; h < kHalves; ++h)
      _mm256_storeu_ps(results[r] + 8 * h, _mm256_mul_ps(acc[r][h], scale));
  }
}

// out[(group · 16 + t) · out_stride + row + r] = results[r][t] + bias[row + r] for the group's
// `tokens` tokens. Each 8 tokens' results are transposed in registers, so that a token's rows go
// out in one store (4 rows) or a pair and a float (3 rows); a lone row goes float by float.
// Stored one float at a time, the 16 tokens' scattered lines had cost 8% of a 2-row int4 tile's
// time (one Zen 4 core, 2048 × 768 × 128), and a third row's floats 3% of a 3-row one's.
template <int kRows>
__attribute__((target("avx2"))) void StoreLaneResults(const float (&results)[kRows][kLanes],
                                                      int64_t group, int tokens, const Weight& bias,
                                                      float* out, int64_t out_stride, int64_t row) {
  float biases[kRows];
  for (int r = 0; r < kRows; ++r) biases[r] = bias ? WeightValue(bias, row + r) : 0.0f;
  for (int h = 0; 8 * h < tokens; ++h) {
    const int count = std::min(8, tokens - 8 * h);
    float* first = out + (group * kLanes + 8 * h) * out_stride + row;
    __m256 rows[kRows];
    for (int r = 0; r < kRows; ++r)
      rows[r] = _mm256_add_ps(_mm256_loadu_ps(results[r] + 8 * h), _mm256_set1_ps(biases[r]));
    int done = 0;  // rows stored
    if constexpr (kRows == 3 || kRows == 4) {
      // Three rows go through the 4-row transpose with a fourth of zeros, stored as a pair and
      // a single float (a 4-float store would write the next tile's row).
      const __m256 row3 = kRows == 4 ? rows[kRows - 1] : _mm256_setzero_ps();
      const __m256 low01 = _mm256_unpacklo_ps(rows[0], rows[1]);
      const __m256 high01 = _mm256_unpackhi_ps(rows[0], rows[1]);
      const __m256 low23 = _mm256_unpacklo_ps(rows[2], row3);
      const __m256 high23 = _mm256_unpackhi_ps(rows[2], row3);
      // quads[q]: tokens q (low 128 bits) and q + 4 (high), rows 0-3 each.
      const __m256 quads[4] = {
          _mm256_shuffle_ps(low01, low23, 0x44), _mm256_shuffle_ps(low01, low23, 0xee),
          _mm256_shuffle_ps(high01, high23, 0x44), _mm256_shuffle_ps(high01, high23, 0xee)};
      for (int t = 0; t < count; ++t) {
        const __m128 quad =
            t < 4 ? _mm256_castps256_ps128(quads[t]) : _mm256_extractf128_ps(quads[t - 4], 1);
        if constexpr (kRows == 4) {
          _mm_storeu_ps(first + t * out_stride, quad);
        } else {
          _mm_storel_pi(reinterpret_cast<__m64*>(first + t * out_stride), quad);
          _mm_store_ss(first + t * out_stride + 2, _mm_movehl_ps(quad, quad));
        }
      }
      done = kRows;
    }
    for (int r = done; r < kRows; ++r) {
      alignas(32) float values[8];
      _mm256_store_ps(values, rows[r]);
      for (int t = 0; t < count; ++t) first[t * out_stride + r] = values[t];
    }
  }
}

}  // namespace zinf::cpu::avx2_lanes
