// The walk over a matrix product's outputs shared by the CPU kernels: register tiles of
// kRows weight rows × kTokens tokens, the leftover tokens in one narrower tile, and token blocks
// small enough to stay in L2 while the weight rows pass over them. The walk only decides which
// tile computes an element, never how, so the kernels' batch invariance is untouched by it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/matmul.h"

namespace zinf::cpu {

// Activation bytes per token block: 3/8 of the core's L2 (768 KiB of a 2 MiB one), leaving room
// for the weight rows that pass over them and for the outputs. The L2 is probed once (2 MiB where
// the system does not say): on a 1 MiB L2 (Zen 4), 768 KiB blocks ran the AVX2 int8 token lanes
// ~8% slower than 256 KiB ones (one core, 2048 × 768 × 512 tokens).
int64_t TokenBlockBytes();

// How many groups of tokens in lanes, `group_bytes` each, one token block holds (at least one):
// the token-lane kernels pass every row tile over that many before the next.
inline int64_t LaneGroupsPerTokenBlock(int64_t group_bytes) {
  return std::max<int64_t>(1, TokenBlockBytes() / std::max<int64_t>(1, group_bytes));
}

// At least `bytes` of 64-byte-aligned scratch owned by the calling thread, one buffer per Owner
// (buffers alive at the same time need different owners). Grown only, so the step loop stops
// allocating once it has seen its largest call; valid until the thread's next call for Owner.
template <typename Owner>
std::byte* AlignedThreadScratch(size_t bytes) {
  struct alignas(64) Line {
    std::byte bytes[64];
  };
  thread_local std::vector<Line> lines;
  if (lines.size() * 64 < bytes) lines.resize((bytes + 63) / 64);
  return reinterpret_cast<std::byte*>(lines.data());
}

// The stride of ForEachStridedTile's tiles of tile_rows rows over `rows` rows: odd (see below).
inline int64_t StridedTileStep(int64_t rows, int tile_rows) {
  const int64_t step = rows / tile_rows;
  return step - (step > 1 && step % 2 == 0);
}

// A lone token's tiles over rows [row_begin, row_end), kRows rows a stride apart: tile i takes
// rows i, i + step, …, i + (kRows − 1)·step (from row_begin), so each row of a tile continues where
// the previous tile's left off and the weights are read as kRows long sequential streams, which
// the hardware prefetchers follow. Consecutive short rows (2 KiB of int8) would restart kRows
// streams every tile: int8 decode from DRAM read 10-25% slower so (Emerald Rapids VM). The step
// is odd: rows an even number of short rows apart share L1 sets (4 KiB apart, 12 ways), and 16 of
// them at once evicted each other (weights in L2: int4 0.7×, int8 0.7× as fast as consecutive
// rows). Calls tile(first_row, step, last) and returns the first row left (fewer than 2·kRows).
template <int kRows, typename TileFn>
int64_t ForEachStridedTile(int64_t row_begin, int64_t row_end, TileFn&& tile) {
  const int64_t step = StridedTileStep(row_end - row_begin, kRows);
  for (int64_t i = 0; i < step; ++i) tile(row_begin + i, step, i + 1 == step);
  return row_begin + step * kRows;
}

// Calls tile.template operator()<R, T>(row, token, row_step) for every tile covering rows
// [row_begin, row_end) × tokens [0, num_tokens), the tile's rows being row, row + row_step, ….
// A lone token uses kDecodeRows-row tiles (more independent rows hide FMA latency when there is
// nothing else to reuse) a stride apart (ForEachStridedTile), then kDecodeRows consecutive ones;
// rows left over go kRows, then one at a time. So do up to max_decode_tokens tokens, one after
// another over each such tile, whose rows are still in L1 for the next token: the quantized
// kernels' kRows × kTokens tiles read rows a pair at a time and reduce per block, so a call of 2
// tokens ran at a third of one token's rate there.
template <int kRows, int kTokens, int kDecodeRows, typename TileFn>
void ForEachTile(int64_t num_tokens, int64_t row_begin, int64_t row_end, int64_t bytes_per_token,
                 TileFn&& tile, int64_t max_decode_tokens = 1) {
  static_assert(kTokens >= 1 && kTokens <= 4, "leftover tiles cover at most 3 tokens");
  const int64_t block = std::max<int64_t>(
      kTokens, TokenBlockBytes() / std::max<int64_t>(bytes_per_token, 1) / kTokens * kTokens);
  // Rows [r, r + R) for tokens [t, t_end): full R × kTokens tiles, then one narrower tile.
  auto row_group = [&]<int R>(int64_t r, int64_t t, int64_t t_end) {
    for (; t + kTokens <= t_end; t += kTokens) tile.template operator()<R, kTokens>(r, t, 1);
    const int64_t left = t_end - t;
    if (left == 1) tile.template operator()<R, 1>(r, t, 1);
    if constexpr (kTokens > 2) {
      if (left == 2) tile.template operator()<R, 2>(r, t, 1);
    }
    if constexpr (kTokens > 3) {
      if (left == 3) tile.template operator()<R, 3>(r, t, 1);
    }
  };
  for (int64_t t = 0; t < num_tokens; t += block) {
    const int64_t t_end = std::min(num_tokens, t + block);
    int64_t r = row_begin;
    if (t_end - t <= max_decode_tokens) {
      auto each_token = [&](int64_t first, int64_t step) {
        for (int64_t token = t; token < t_end; ++token)
          tile.template operator()<kDecodeRows, 1>(first, token, step);
      };
      r = ForEachStridedTile<kDecodeRows>(
          row_begin, row_end, [&](int64_t first, int64_t step, bool) { each_token(first, step); });
      // The strided tiles leave fewer than 2 · kDecodeRows rows; the narrow tiles' 2 rows are
      // about half as fast a row for a lone token (~5% of 110M int4 decode's product time).
      for (; r + kDecodeRows <= row_end; r += kDecodeRows) each_token(r, 1);
    }
    for (; r + kRows <= row_end; r += kRows) row_group.template operator()<kRows>(r, t, t_end);
    for (; r < row_end; ++r) row_group.template operator()<1>(r, t, t_end);
  }
}

// Writes a tile's results (rows r, r + row_step, …; tokens t..) plus the bias into
// out[token][row].
template <int kRows, int kTokens>
inline void StoreTile(const float (&results)[kRows][kTokens], const Weight& bias, float* out,
                      int64_t out_stride, int64_t r, int64_t t, int64_t row_step = 1) {
  for (int i = 0; i < kRows; ++i) {
    const int64_t row = r + i * row_step;
    const float b = bias ? WeightValue(bias, row) : 0.0f;
    for (int j = 0; j < kTokens; ++j) out[(t + j) * out_stride + row] = results[i][j] + b;
  }
}

}  // namespace zinf::cpu
