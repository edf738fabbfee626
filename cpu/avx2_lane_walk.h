// The walk the AVX2 token-lane kernels (cpu/matmul_i8_avx2_lanes.cpp, cpu/matmul_q4_avx2_lanes.cpp)
// share: row tiles over groups of 16 tokens in lanes, a group of at most 8 in one 256-bit half,
// and the tiles' results stored with the bias.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/matmul.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/tiling.h"
#include "engine/backend.h"

namespace zinf::cpu::avx2_lanes {

inline constexpr int kLanes = Q8TokenLanes::kLanes;

// Calls tile.template operator()<kRows, kHalves>(row, group, tokens) for every tile of rows
// [row_begin, row_end) × the lane groups of `lanes` (num_tokens tokens; Q8TokenLanes or
// I16TokenLanes): kTileRows rows, then one at a time, the groups in blocks that stay in L2
// (group_bytes each) while every row tile passes over them; kHalves 1 for a group of at most 8
// tokens. A call of at most 8 tokens (one half-width group) takes tiles of kFewTokenRows rows:
// half the accumulators leave room for more.
template <int kTileRows, int kFewTokenRows, typename Lanes, typename Tile>
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
    for (; r + kFewTokenRows <= row_end; r += kFewTokenRows)
      rows_over.template operator()<kFewTokenRows>(r, 0, 1);
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

// out[(group · 16 + t) · out_stride + row + r] = results[r][t] + bias[row + r] for the group's
// `tokens` tokens.
template <int kRows>
void StoreLaneResults(const float (&results)[kRows][kLanes], int64_t group, int tokens,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row) {
  for (int r = 0; r < kRows; ++r) {
    const float b = bias ? WeightValue(bias, row + r) : 0.0f;
    for (int t = 0; t < tokens; ++t)
      out[(group * kLanes + t) * out_stride + row + r] = results[r][t] + b;
  }
}

}  // namespace zinf::cpu::avx2_lanes
