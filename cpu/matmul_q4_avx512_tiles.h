// The AVX-512 int4 kernel's block steps and its 16-row tiles for a few tokens (decode, an expert's
// few rows), used by cpu/matmul_q4_avx512.cpp: DecodeTile for 1-4 tokens, DecodeQuadTile for one
// token over rows of whole lines. Both keep the portable chain's group sums and float steps per row
// and token.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/matmul_q4_avx512.h"
#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "cpu/reduce_avx512.h"
#include "cpu/transpose_avx512.h"
#include "engine/quantized.h"

namespace zinf::cpu::q4_avx512 {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source, which
// -W(maybe-)uninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#ifndef ZINF_Q4_INLINE
#define ZINF_Q4_INLINE inline __attribute__((always_inline))
#endif

// Block `b` of rows a and b as [a's 32 nibbles | b's 32 nibbles], one byte each: the 16 bytes of
// each row in two 128-bit lanes, the second shifted right by 4 (16-bit shifts; the mask drops the
// neighbour byte's bits).
ZINF_Q4_INLINE __m512i UnpackPair(const uint8_t* a, const uint8_t* b, int64_t block) {
  const __m512i shifts = _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0, 0,
                                          0x0004000400040004, 0x0004000400040004, 0, 0);
  __m512i both =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16 * block)));
  both = _mm512_mask_broadcast_i32x4(
      both, 0xff00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * block)));
  return _mm512_and_si512(_mm512_srlv_epi16(both, shifts), _mm512_set1_epi8(0x0f));
}

// Group g's share of the next row tile: its nibbles (from `next`, its first row) and its
// parameters (from `next_params`, its first row's).
template <int kRows, int kBlocks>
ZINF_Q4_INLINE void PrefetchGroupShare(const uint8_t* next, const uint16_t* next_params,
                                       int64_t g) {
  const char* nibbles = reinterpret_cast<const char*>(next) + g * kRows * kBlocks * 16;
#pragma GCC unroll 16
  for (int line = 0; line < (kRows * kBlocks * 16 + 63) / 64; ++line)
    _mm_prefetch(nibbles + 64 * line, _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(next_params) + g * kRows * 4, _MM_HINT_T0);
}

// A token-lane tile's rows prepared once for all its lane groups: row r's nibbles as bytes at
// bytes + r · stride, its (scale, minimum) pairs as floats at params + r · param_stride (so each
// is one broadcast operand, not a conversion per lane group).
struct UnpackedQ4Rows {
  const uint8_t* bytes;
  int64_t stride;
  const float* params;
  int64_t param_stride;

  const uint8_t* row(int r) const { return bytes + r * stride; }
  const float* row_params(int r) const { return params + r * param_stride; }
};

// Block b of a token's int8 values (from x), in both 256-bit halves.
ZINF_Q4_INLINE __m512i BroadcastTokenBlock(const int8_t* x, int b) {
  return _mm512_broadcast_i64x4(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + b * kQ4BlockElements)));
}

// A 16-row tile's rows (row, row + row_step, …), and where the next tile reads in their place:
// next_rows rows further on (0: no prefetching). Passed by reference: by value (24 bytes, on the
// stack) GCC copied it with one 16-byte load of two 8-byte stores, a failed store forward per
// tile (~4% of 110M int4 decode, Zen 4).
struct TileRows {
  int64_t row, row_step, next_rows;
};

// Step `step` of the next tile's prefetch, a step being kSpan bytes of each row's nibbles: a
// step's share of that tile's lines each step, so that few requests are in flight at once (16 at
// once every fourth group into L1: 8-token decode 0.8× as fast). The next tile's rows right after
// this tile's (next_rows == kRows) are one region, fetched in memory order; rows a stride apart
// are each followed by their next tile's row, fetched line by line, the rows within a line.
// kNibbles false leaves the nibbles to the caller (DecodeQuadTile's rows a stride apart).
template <int kRows, int kBlocks, int kSpan, bool kNibbles = true>
ZINF_Q4_INLINE void PrefetchNextShare(const uint8_t* const (&rows)[kRows],
                                      const uint16_t* const (&params)[kRows], const QuantRows& w,
                                      int64_t next_rows, int64_t step, bool into_l1) {
  constexpr int kNibbleLines = kRows * kSpan / 64;
  constexpr int kParamLines = kRows * kSpan / (kBlocks * 256);  // 4 bytes per kBlocks · 16
  static_assert(kNibbleLines >= 1 && kParamLines >= 1);
  auto fetch = [into_l1](const void* address) __attribute__((always_inline)) {
    if (into_l1) {
      _mm_prefetch(static_cast<const char*>(address), _MM_HINT_T0);
    } else {
      _mm_prefetch(static_cast<const char*>(address), _MM_HINT_T1);
    }
  };
  const bool one_region = next_rows == kRows;
#pragma GCC unroll 16
  for (int i = 0; i < (kNibbles ? kNibbleLines : 0); ++i) {
    const int64_t p = step * kNibbleLines + i;
    const int64_t row = one_region ? 0 : p % kRows, line = one_region ? p : p / kRows;
    fetch(rows[row] + next_rows * w.row_bytes + 64 * line);
  }
#pragma GCC unroll 4
  for (int i = 0; i < kParamLines; ++i) {
    const int64_t p = step * kParamLines + i;
    const int64_t row = one_region ? 0 : p % kRows, line = one_region ? p : p / kRows;
    fetch(reinterpret_cast<const std::byte*>(params[row]) + next_rows * w.groups * 4 + 64 * line);
  }
}

// Few tokens (decode, an expert's few rows): 16 rows, ReduceEight's lane l holding row
// DecodeLaneRow(l). The rows' parameters are converted 16 groups at a time and transposed into
// that lane order, so a group costs one load for its scales and one fma per token for the
// minimums' chain (lanes are rows) where converting them one by one cost more than the products;
// the unpacked nibbles serve every token of the tile.
constexpr int kDecodeRows = kQ4Avx512DecodeRows;
constexpr int DecodeLaneRow(int lane) { return 2 * ReducedRegister(lane) + ReducedHalf(lane); }

// Groups [g0, g0 + count) (count ≤ 16): scales[j] lane l = the scale of group g0 + j in the row
// whose parameters are lane_params[l], minimums likewise (F16C converts what F16ToF32 would). The
// (scale, minimum) pairs are transposed as they are, one transpose for both (two, one per
// converted half, cost a fifth of the one-token tile's time in L2).
ZINF_Q4_INLINE void LaneOrderedParams(const uint16_t* const (&lane_params)[kDecodeRows], int64_t g0,
                                      int count, float (&scales)[16][16],
                                      float (&minimums)[16][16]) {
  const auto mask = static_cast<__mmask16>((1u << count) - 1);
  __m512 pairs[16];  // bit patterns: the transpose only moves them
#pragma GCC unroll 16
  for (int l = 0; l < 16; ++l)
    pairs[l] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(mask, lane_params[l] + 2 * g0));
  Transpose16(pairs);
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    const __m512i group = _mm512_castps_si512(pairs[j]);
    _mm512_store_ps(scales[j], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(group)));
    _mm512_store_ps(minimums[j],
                    _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(group, 16))));
  }
}

// One token's float steps over 16 rows in lanes: per group, acc = fma(float(sum), row scale ×
// token scale, acc) and the minimums' own chain, added at the end (the portable chain's steps, so
// every tile that uses it gives the same bits).
struct RowChains {
  __m512 acc, minimums;

  ZINF_Q4_INLINE RowChains() : acc(_mm512_setzero_ps()), minimums(_mm512_setzero_ps()) {}

  ZINF_Q4_INLINE void AddGroup(__m512i sum, __m512 row_scales, __m512 row_minimums,
                               const Q4Activations& xa, int64_t token, int64_t g) {
    const __m512 factors = _mm512_mul_ps(row_scales, _mm512_set1_ps(xa.scale(token, g)));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), factors, acc);
    minimums = _mm512_fmadd_ps(row_minimums, _mm512_set1_ps(xa.min_factor(token, g)), minimums);
  }
  ZINF_Q4_INLINE void Store(float (&lanes)[16]) const {
    _mm512_storeu_ps(lanes, _mm512_add_ps(acc, minimums));
  }
};

// The 16 rows of `tile` × tokens [token, token + kTokens): PairTile's arithmetic per row and
// token.
template <int kBlocks, int kTokens>
void DecodeTile(const Q4Activations& xa, int64_t token, const QuantRows& w, const TileRows& tile,
                float (&results)[kDecodeRows][kTokens]) {
  constexpr int kPairs = kDecodeRows / 2;
  const uint8_t* rows[kDecodeRows];
  const uint16_t* params[kDecodeRows];
  const uint16_t* lane_params[kDecodeRows];
#pragma GCC unroll 16
  for (int r = 0; r < kDecodeRows; ++r) {
    rows[r] = w.row(tile.row + r * tile.row_step);
    params[r] = w.q4_params(tile.row + r * tile.row_step);
    lane_params[r] = w.q4_params(tile.row + DecodeLaneRow(r) * tile.row_step);
  }
  RowChains chains[kTokens];
  for (int64_t g0 = 0; g0 < xa.groups; g0 += 16) {
    const int count = static_cast<int>(std::min<int64_t>(16, xa.groups - g0));
    alignas(64) float scales[16][16], minimums[16][16];
    LaneOrderedParams(lane_params, g0, count, scales, minimums);
    for (int j = 0; j < count; ++j) {
      const int64_t g = g0 + j;
      if (tile.next_rows != 0)
        PrefetchNextShare<kDecodeRows, kBlocks, kBlocks * 16>(rows, params, w, tile.next_rows, g,
                                                              true);
      // One token unpacks block by block; several keep the group's unpacked blocks for every
      // token (kBlocks · 8 registers: Walk's kDecodeTokens keeps that within the 32).
      __m512i wv[kBlocks][kPairs];
      if constexpr (kTokens > 1) {
#pragma GCC unroll 4
        for (int b = 0; b < kBlocks; ++b) {
#pragma GCC unroll 8
          for (int p = 0; p < kPairs; ++p)
            wv[b][p] = UnpackPair(rows[2 * p], rows[2 * p + 1], g * kBlocks + b);
        }
      }
      const __m512 row_scales = _mm512_load_ps(scales[j]);
      const __m512 row_minimums = _mm512_load_ps(minimums[j]);
#pragma GCC unroll 4
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* x = xa.token_values(token + t) + g * kBlocks * kQ4BlockElements;
        __m512i sums[kPairs];
#pragma GCC unroll 4
        for (int b = 0; b < kBlocks; ++b) {
          const __m512i xv = BroadcastTokenBlock(x, b);
#pragma GCC unroll 8
          for (int p = 0; p < kPairs; ++p) {
            if constexpr (kTokens == 1)
              wv[b][p] = UnpackPair(rows[2 * p], rows[2 * p + 1], g * kBlocks + b);
            sums[p] = _mm512_dpbusd_epi32(b == 0 ? _mm512_setzero_si512() : sums[p], wv[b][p], xv);
          }
        }
        chains[t].AddGroup(ReduceEight(sums), row_scales, row_minimums, xa, token + t, g);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < kTokens; ++t) {
    float lanes[16];
    chains[t].Store(lanes);
#pragma GCC unroll 16
    for (int l = 0; l < 16; ++l) results[DecodeLaneRow(l)][t] = lanes[l];
  }
}

// Quad q's four block sums of 16 rows against one token's values x: sums[i] lane r = row r's sum
// for block 4q + i. A row's quad is one line, each 128-bit lane one block's 16 bytes, whose low
// nibbles are the block's values 0-15 and high nibbles 16-31: two vpdpbusd against the token's
// blocks split the same way leave each lane's four dwords summing to its block's sum. Each row's
// line `prefetch_offset` bytes further on is fetched into L1 (into L2: 1.1B-shape decode, 2
// threads, Emerald Rapids guest, alternating, 3.5% slower), one instruction on the address
// already in a register; with offset 0 (no next tile, or prefetching measured off) it asks for the
// line being loaded, which changes nothing but still costs that instruction (16 per quad).
ZINF_Q4_INLINE void QuadBlockSums(const uint8_t* const (&rows)[kDecodeRows], int64_t q,
                                  const int8_t* x, int64_t prefetch_offset, __m512i (&sums)[4]) {
  const __m512i first = _mm512_loadu_si512(x + 128 * q);  // blocks 4q, 4q + 1: 32 values each
  const __m512i second = _mm512_loadu_si512(x + 128 * q + 64);
  const __m512i x_low = _mm512_shuffle_i32x4(first, second, _MM_SHUFFLE(2, 0, 2, 0));
  const __m512i x_high = _mm512_shuffle_i32x4(first, second, _MM_SHUFFLE(3, 1, 3, 1));
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  auto row_sum = [&](int r) __attribute__((always_inline)) {
    const uint8_t* line = rows[r] + 64 * q;
    _mm_prefetch(reinterpret_cast<const char*>(line) + prefetch_offset, _MM_HINT_T0);
    __m512i packed = _mm512_loadu_si512(line);
    // In a register: GCC 12 otherwise stores the line to the stack and reloads it as the memory
    // operand of both nibbles' instructions (1.2x the tile's time with the weights in L3).
    asm("" : "+v"(packed));
    const __m512i low = _mm512_and_si512(packed, nibble);
    const __m512i high = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), low, x_low), high,
                               x_high);
  };
  // Each lane's four dwords to one: rows in pairs, then in fours (lane i of quads[k] holds rows
  // 4k .. 4k + 3 of block i), then the 128-bit lanes transposed (integer adds: any grouping gives
  // the same sums). Pairs are added as their rows are summed, so that 8 sums are live, not 16.
  __m512i pairs[8], quads[4];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) pairs[p] = AddPairs(row_sum(2 * p), row_sum(2 * p + 1));
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) quads[k] = AddLast(pairs[2 * k], pairs[2 * k + 1]);
  const __m512i low01 = _mm512_shuffle_i32x4(quads[0], quads[1], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i high01 = _mm512_shuffle_i32x4(quads[0], quads[1], _MM_SHUFFLE(3, 2, 3, 2));
  const __m512i low23 = _mm512_shuffle_i32x4(quads[2], quads[3], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i high23 = _mm512_shuffle_i32x4(quads[2], quads[3], _MM_SHUFFLE(3, 2, 3, 2));
  sums[0] = _mm512_shuffle_i32x4(low01, low23, _MM_SHUFFLE(2, 0, 2, 0));
  sums[1] = _mm512_shuffle_i32x4(low01, low23, _MM_SHUFFLE(3, 1, 3, 1));
  sums[2] = _mm512_shuffle_i32x4(high01, high23, _MM_SHUFFLE(2, 0, 2, 0));
  sums[3] = _mm512_shuffle_i32x4(high01, high23, _MM_SHUFFLE(3, 1, 3, 1));
}

// One token over the 16 rows of `tile`, whose rows are whole quads (four blocks, a line):
// DecodeTile's group sums and float steps for each row (so the same bits), its sums formed a line
// per row and load, about half DecodeTile's instructions per byte. Emerald Rapids VM, groups of
// 32: weights in L2, one thread, 14.0 vs 8.7 GB/s; 110M-shape decode (weights in L3) ~1.1x; 1.1B
// from DRAM unchanged (~25 tok/s) until the tiles took rows a stride apart (36 tok/s), 16 rows of
// 1 KiB having been short streams for the hardware prefetchers.
template <int kBlocks>
void DecodeQuadTile(const Q4Activations& xa, int64_t token, const QuantRows& w,
                    const TileRows& tile, float (&results)[kDecodeRows][1]) {
  constexpr int kGroupsPerQuad = 4 / kBlocks;
  const uint8_t* rows[kDecodeRows];
  const uint16_t* params[kDecodeRows];
#pragma GCC unroll 16
  for (int r = 0; r < kDecodeRows; ++r) {
    rows[r] = w.row(tile.row + r * tile.row_step);
    params[r] = w.q4_params(tile.row + r * tile.row_step);
  }
  const int8_t* x = xa.token_values(token);
  // Rows a stride apart are each followed by their next tile's row: QuadBlockSums fetches it.
  const int64_t strided_prefetch =
      tile.next_rows != 0 && tile.next_rows != kDecodeRows ? tile.next_rows * w.row_bytes : 0;
  RowChains chains;
  for (int64_t g0 = 0; g0 < xa.groups; g0 += 16) {
    const int count = static_cast<int>(std::min<int64_t>(16, xa.groups - g0));
    alignas(64) float scales[16][16], minimums[16][16];
    LaneOrderedParams(params, g0, count, scales, minimums);
    for (int j = 0; j < count; j += kGroupsPerQuad) {
      const int64_t q = (g0 + j) / kGroupsPerQuad;
      // Into L2: into L1 the next tile's lines held the fill buffers the current tile's loads
      // wait on (DRAM-resident 5632 × 2048, 2 threads: ~15 vs ~17 GB/s; two tiles ahead, ~16).
      if (tile.next_rows == kDecodeRows) {
        PrefetchNextShare<kDecodeRows, kBlocks, 64>(rows, params, w, tile.next_rows, q, false);
      } else if (tile.next_rows != 0) {
        PrefetchNextShare<kDecodeRows, kBlocks, 64, false>(rows, params, w, tile.next_rows, q,
                                                           false);
      }
      __m512i block_sums[4];
      QuadBlockSums(rows, q, x, strided_prefetch, block_sums);
#pragma GCC unroll 4
      for (int k = 0; k < kGroupsPerQuad; ++k) {
        const int64_t g = g0 + j + k;
        __m512i sum = block_sums[k * kBlocks];
#pragma GCC unroll 4
        for (int b = 1; b < kBlocks; ++b) sum = _mm512_add_epi32(sum, block_sums[k * kBlocks + b]);
        chains.AddGroup(sum, _mm512_load_ps(scales[j + k]), _mm512_load_ps(minimums[j + k]), xa,
                        token, g);
      }
    }
  }
  float lanes[16];
  chains.Store(lanes);
#pragma GCC unroll 16
  for (int r = 0; r < kDecodeRows; ++r) results[r][0] = lanes[r];
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace zinf::cpu::q4_avx512
