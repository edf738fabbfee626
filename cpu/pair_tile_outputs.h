// The AVX-512 float kernel's outputs, set aside by its full tiles (6 rows × 8 tokens) and written a
// few row groups at a time: a tile that stores its 48 sums straight into the token-major output
// touches 8 lines a row's length apart (one L1 set when rows are 2048 floats), which made those
// tiles 10-14% slower; the sums written 48 rows at a time fill whole lines instead.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/matmul.h"
#include "engine/backend.h"

namespace zinf::cpu::pair_outputs {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

// Row groups per set: 48 rows, three whole lines of each token's outputs.
constexpr int kSetGroups = 8;
constexpr int kGroupRows = 6;
// A tile's sums: three registers, each two rows in ReduceTwoRowsOfFourPairs' lanes.
constexpr int kTileRegisters = kGroupRows / 2;
// Tiles ahead whose output lines are asked for (with intent to write) while one tile is written:
// the lines come from L3, and stores wait for them one by one otherwise.
constexpr int kLinesAhead = 2;

// A set's staged sums: tile t of group g at registers + (g · tiles + t) · kTileRegisters.
struct StagedSet {
  const __m512* registers;
  int64_t tiles;  // per group, all staged: their 8 tokens exist, their rows have no tail
  int64_t groups;
};

// PREFETCHW (every AVX-512 CPU has it) written out: GCC 12 emitted no instruction at all for
// __builtin_prefetch(p, 1, 3) inlined from this header, with or without prfchw in the pragmas.
inline void RequestForWrite(const float* address) {
  asm volatile("prefetchw %0" : : "m"(*reinterpret_cast<const char*>(address)));
}

// The lines of rows [row, row + rows) of tokens [first_token, first_token + 8), asked for with
// intent to write.
inline void RequestLines(const float* out, int64_t out_stride, int64_t first_token, int64_t row,
                         int64_t rows) {
  for (int64_t token = first_token; token < first_token + 8; ++token) {
    const float* line = out + token * out_stride + row;
    for (int64_t k = 0; k < rows; k += 16) RequestForWrite(line + k);
    RequestForWrite(line + rows - 1);
  }
}

// Writes `set` to the outputs of rows [row, row + 6 · groups) for the 8 tokens of each tile from
// first_token (tile t's from first_token + 8t), adding the bias. The same bits as the tile's own
// stores: each sum moved, then bias (or 0) added once.
inline void WriteStagedSet(const StagedSet& set, int64_t first_token, int64_t row,
                           const Weight& bias, float* out, int64_t out_stride) {
  // Lanes 4b + j of a register: j = 0 its first row for token b, 1 that row for token 4 + b, 2 and
  // 3 its second row for the same tokens. `low` gathers tokens 0-3's first four rows (token k at
  // lanes 4k .. 4k + 3) from registers 0 and 1, `high` tokens 4-7's.
  alignas(64) static constexpr int32_t kLow[16] = {0, 2,  16, 18, 4,  6,  20, 22,
                                                   8, 10, 24, 26, 12, 14, 28, 30};
  alignas(64) static constexpr int32_t kHigh[16] = {1, 3,  17, 19, 5,  7,  21, 23,
                                                    9, 11, 25, 27, 13, 15, 29, 31};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
  // Token k of a half: its four rows from the gathered register, its last two from register 2.
  __m512i six[2][4];
  for (int half = 0; half < 2; ++half) {
    for (int k = 0; k < 4; ++k) {
      six[half][k] = _mm512_setr_epi32(4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3, 16 + 4 * k + half,
                                       16 + 4 * k + half + 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }
  }
  const int64_t rows = set.groups * kGroupRows;
  alignas(64) float bias_rows[kSetGroups * kGroupRows + 16] = {};
  for (int64_t r = 0; r < rows; ++r) bias_rows[r] = bias ? WeightValue(bias, row + r) : 0.0f;
  for (int64_t t = 0; t < std::min<int64_t>(kLinesAhead, set.tiles); ++t)
    RequestLines(out, out_stride, first_token + 8 * t, row, rows);
  for (int64_t t = 0; t < set.tiles; ++t) {
    if (t + kLinesAhead < set.tiles)
      RequestLines(out, out_stride, first_token + 8 * (t + kLinesAhead), row, rows);
    float* tile_out = out + (first_token + 8 * t) * out_stride + row;
    for (int64_t g = 0; g < set.groups; ++g) {
      const __m512* sums = set.registers + (g * set.tiles + t) * kTileRegisters;
      const __m512 group_bias = _mm512_maskz_loadu_ps(0x3f, bias_rows + g * kGroupRows);
      const __m512 halves[2] = {_mm512_permutex2var_ps(sums[0], low, sums[1]),
                                _mm512_permutex2var_ps(sums[0], high, sums[1])};
      for (int half = 0; half < 2; ++half) {
        for (int k = 0; k < 4; ++k) {
          const __m512 token_rows = _mm512_add_ps(
              _mm512_permutex2var_ps(halves[half], six[half][k], sums[2]), group_bias);
          _mm512_mask_storeu_ps(tile_out + (4 * half + k) * out_stride + g * kGroupRows, 0x3f,
                                token_rows);
        }
      }
    }
  }
}

#pragma GCC pop_options

}  // namespace zinf::cpu::pair_outputs
