// MatMulQ4Avx2Lanes: the activations in the token-lane layout (cpu/q8_token_lanes.h, no bias) as
// two 256-bit halves of 8 tokens, and each tile's rows unpacked once to a byte per nibble (element
// order) with their parameters widened to floats. A row's 4 unpacked nibbles, broadcast, against
// 8 tokens' 4 values: maddubs (nibbles are unsigned: no sign trick) leaves each token's products
// in 16-bit pairs in its lane, summed there over a block and widened once; over a group, its exact
// sum. Then the float steps of the AVX-512 token-lane tile (cpu/matmul_q4_avx512_lanes.h) lane by
// lane. A call of at most 8 tokens (one lane group) multiplies the packed bytes instead, each
// broadcast dword split into its two nibbles' steps (PackedFewTokenTile).
#include "cpu/matmul_q4_avx2_lanes.h"

#include <immintrin.h>

#include <cstring>

#include "cpu/avx2_lane_walk.h"
#include "cpu/halves_avx2.h"
#include "cpu/matmul_q4_avx512.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/tiling.h"
#include "engine/dtype.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

using avx2_lanes::kLanes;
// 6 block and 6 float accumulators, 2 token vectors, a broadcast weight: GCC keeps a few float
// accumulators on the stack, updated once a group, and still 3 rows beat 2 (one Zen 4 core, groups
// of 32, 2048 × 2048 × 128 tokens: 136 → 145 GOP/s; 4 rows: 122).
constexpr int kTileRows = 3;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Rows [row, row + rows) of w as one byte per element, in element order, `stride` bytes apart
// (the whole groups the row holds), and their (scale, minimum) pairs as floats.
struct UnpackedRows {
  const uint8_t* bytes;
  int64_t stride;
  const float* params;
  int64_t param_stride;
};

// Row `row`'s (scale, minimum) pairs as floats into widened[0, 2 · groups).
void WidenParams(const QuantRows& w, int64_t row, float* widened) {
  const uint16_t* halves = w.q4_params(row);
  const int64_t count = w.groups * 2;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(widened + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                      reinterpret_cast<const __m128i*>(halves + i))));
  }
  for (; i < count; ++i) widened[i] = F16ToF32(halves[i]);  // what F16C gives
}

UnpackedRows UnpackRows(const QuantRows& w, int64_t row, int rows) {
  struct BytesTag;
  struct ParamsTag;
  const int64_t stride = w.groups * w.group_size, param_stride = w.groups * 2;
  auto* bytes = reinterpret_cast<uint8_t*>(
      AlignedThreadScratch<BytesTag>(static_cast<size_t>(rows * stride)));
  auto* params = reinterpret_cast<float*>(
      AlignedThreadScratch<ParamsTag>(static_cast<size_t>(rows * param_stride * 4)));
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const int64_t blocks = stride / kQ4BlockElements;
  for (int r = 0; r < rows; ++r) {
    const uint8_t* nibbles = w.row(row + r);
    uint8_t* out = bytes + r * stride;
    int64_t b = 0;
    // Two blocks from one load: their low nibbles, then their high ones, each block's two
    // halves brought together (LowHalves, HighHalves).
    for (; b + 2 <= blocks; b += 2) {
      const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(nibbles + 16 * b));
      const __m256i low = _mm256_and_si256(packed, nibble);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * b), LowHalves(low, high));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * b + 32), HighHalves(low, high));
    }
    if (b < blocks) {
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(nibbles + 16 * b));
      const __m128i low_nibble = _mm256_castsi256_si128(nibble);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32 * b), _mm_and_si128(packed, low_nibble));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32 * b + 16),
                       _mm_and_si128(_mm_srli_epi16(packed, 4), low_nibble));
    }
    WidenParams(w, row + r, params + r * param_stride);
  }
  return {bytes, stride, params, param_stride};
}

// The first `tokens` (≤ 8) of p, zeros past them.
inline __m256 LoadFirst(const float* p, int tokens) {
  if (tokens >= 8) return _mm256_loadu_ps(p);
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(tokens), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_maskload_ps(p, mask);
}

// Group g's float step: acc[r][h] += float(sums[r][h]) × row r's scale × the tokens' scales
// (params: rows' widened (scale, minimum) pairs, param_stride apart).
template <int kRows, int kHalves>
__attribute__((always_inline)) inline void AddGroupSums(const __m256i (&sums)[kRows][kHalves],
                                                        int64_t g, int64_t first_token, int tokens,
                                                        const Q4Activations& xa,
                                                        const float* params, int64_t param_stride,
                                                        __m256 (&acc)[kRows][kHalves]) {
  const float* scales = xa.scales + g * xa.tokens + first_token;
  __m256 token_scales[kHalves];
#pragma GCC unroll 2
  for (int h = 0; h < kHalves; ++h) token_scales[h] = LoadFirst(scales + 8 * h, tokens - 8 * h);
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    const __m256 row_scale = _mm256_set1_ps(params[r * param_stride + 2 * g]);
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) {
      const __m256 factors = _mm256_mul_ps(row_scale, token_scales[h]);
      acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r][h]), factors, acc[r][h]);
    }
  }
}

// The minimums' terms in a pass of their own (in the groups' loop their accumulators would
// crowd the registers; the same steps in the same order, so the same bits), added to acc into
// results.
template <int kRows, int kHalves>
__attribute__((always_inline)) inline void AddMinimumsAndStore(
    const __m256 (&acc)[kRows][kHalves], int64_t first_token, int tokens, const Q4Activations& xa,
    const float* params, int64_t param_stride, float (&results)[kRows][kLanes]) {
  __m256 minimums[kRows][kHalves];
  avx2_lanes::SetZero(minimums);
  for (int64_t g = 0; g < xa.groups; ++g) {
    const float* min_factors = xa.min_factors + g * xa.tokens + first_token;
    __m256 token_minimums[kHalves];
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h)
      token_minimums[h] = LoadFirst(min_factors + 8 * h, tokens - 8 * h);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m256 row_minimum = _mm256_set1_ps(params[r * param_stride + 2 * g + 1]);
#pragma GCC unroll 2
      for (int h = 0; h < kHalves; ++h)
        minimums[r][h] = _mm256_fmadd_ps(row_minimum, token_minimums[h], minimums[r][h]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < kHalves; ++h)
      _mm256_storeu_ps(results[r] + 8 * h, _mm256_add_ps(acc[r][h], minimums[r][h]));
}

// Rows [0, kRows) of `unpacked` × lane group `group` (its `tokens` tokens from `first_token`, 8
// per half; kHalves 1: at most 8). kBlocks, the blocks per group, is a template argument: with a
// runtime count GCC kept the float accumulators on the stack across each group's block loop
// (groups of 32, 2048 × 2048 × 128 tokens, one Zen 4 core: 116 vs 134 GOP/s).
template <int kRows, int kHalves, int kBlocks>
void LaneTile(const Q8TokenLanes& lanes, int64_t group, int64_t first_token, int tokens,
              const Q4Activations& xa, const UnpackedRows& unpacked,
              avx2_lanes::NextTileRequests next, float (&results)[kRows][kLanes]) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[kRows][kHalves];
  avx2_lanes::SetZero(acc);
  for (int64_t g = 0; g < xa.groups; ++g) {
    next.RequestShare();
    __m256i sums[kRows][kHalves];
    avx2_lanes::SetZero(sums);
#pragma GCC unroll 4
    for (int64_t b = g * kBlocks; b < (g + 1) * kBlocks; ++b) {
      const auto* x = reinterpret_cast<const __m256i*>(lanes.block(group, b));
      // A block's products are summed in 16 bits and widened once: each 16-bit lane gathers
      // 16 products of a nibble (≤ 15) and a value (≥ −128), |sum| ≤ 30720, so nothing
      // overflows and the sums are the same; madd per step instead would be twice the
      // multiplier work.
      __m256i pairs[kRows][kHalves];
      avx2_lanes::SetZero(pairs);
      // Two steps at a time, as the 8-bit int8 tile (cpu/matmul_i8_avx2_byte_lanes.cpp).
#pragma GCC unroll 2
      for (int k = 0; k < 8; ++k) {
        // Both halves spelled out, as in the int8 lane tile.
        const __m256i low = _mm256_load_si256(x + 2 * k);
        const __m256i high = kHalves == 2 ? _mm256_load_si256(x + 2 * k + 1) : low;
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          int32_t dword;
          std::memcpy(&dword, unpacked.bytes + r * unpacked.stride + b * kQ4BlockElements + 4 * k,
                      4);
          const __m256i wv = _mm256_set1_epi32(dword);
          pairs[r][0] = _mm256_add_epi16(pairs[r][0], _mm256_maddubs_epi16(wv, low));
          if constexpr (kHalves == 2) {
            pairs[r][kHalves - 1] =
                _mm256_add_epi16(pairs[r][kHalves - 1], _mm256_maddubs_epi16(wv, high));
          }
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
        for (int h = 0; h < kHalves; ++h)
          sums[r][h] = _mm256_add_epi32(sums[r][h], _mm256_madd_epi16(pairs[r][h], ones));
    }
    AddGroupSums(sums, g, first_token, tokens, xa, unpacked.params, unpacked.param_stride, acc);
  }
  AddMinimumsAndStore(acc, first_token, tokens, xa, unpacked.params, unpacked.param_stride,
                      results);
}

// Rows [row, row + kRows) × the ≤ 8 tokens of a call's one lane group, straight from the packed
// nibbles: a block's bytes 4m .. 4m + 3, broadcast, hold in their low nibbles its elements
// 4m .. 4m + 3 (the lanes' step m) and in their high nibbles 4m + 16 .. 4m + 19 (step m + 4), so
// two maddubs per dword need no unpacked copy of the rows. params: the rows' widened pairs.
template <int kRows, int kBlocks>
void PackedFewTokenTile(const Q8TokenLanes& lanes, int tokens, const Q4Activations& xa,
                        const QuantRows& w, int64_t row, const float* params,
                        avx2_lanes::NextTileRequests next, float (&results)[kRows][kLanes]) {
  const __m256i ones = _mm256_set1_epi16(1), nibble = _mm256_set1_epi8(0x0f);
  const int64_t param_stride = w.groups * 2;
  const uint8_t* packed[kRows];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) packed[r] = w.row(row + r);
  __m256 acc[kRows][1];
  avx2_lanes::SetZero(acc);
  for (int64_t g = 0; g < xa.groups; ++g) {
    next.RequestShare();
    __m256i sums[kRows][1];
    avx2_lanes::SetZero(sums);
#pragma GCC unroll 4
    for (int64_t b = g * kBlocks; b < (g + 1) * kBlocks; ++b) {
      const auto* x = reinterpret_cast<const __m256i*>(lanes.block(0, b));
      __m256i pairs[kRows];  // each 16-bit lane ≤ 16 · 15 · 128 in size: exact (LaneTile)
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) pairs[r] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        const __m256i low_x = _mm256_load_si256(x + 2 * m);
        const __m256i high_x = _mm256_load_si256(x + 2 * (m + 4));
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          int32_t dword;
          std::memcpy(&dword, packed[r] + 16 * b + 4 * m, 4);
          const __m256i wv = _mm256_set1_epi32(dword);
          const __m256i low = _mm256_and_si256(wv, nibble);
          const __m256i high = _mm256_and_si256(_mm256_srli_epi16(wv, 4), nibble);
          pairs[r] =
              _mm256_add_epi16(pairs[r], _mm256_add_epi16(_mm256_maddubs_epi16(low, low_x),
                                                          _mm256_maddubs_epi16(high, high_x)));
          // Added step by step: GCC otherwise formed a block's 32 products first and spilled
          // them (one core, 768 × 768 × 8 tokens: 99 against 119 GOP/s).
          asm("" : "+x"(pairs[r]));
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r)
        sums[r][0] = _mm256_add_epi32(sums[r][0], _mm256_madd_epi16(pairs[r], ones));
    }
    AddGroupSums(sums, g, 0, tokens, xa, params, param_stride, acc);
  }
  AddMinimumsAndStore(acc, 0, tokens, xa, params, param_stride, results);
}

#pragma GCC pop_options

}  // namespace

template <int kBlocks>
void MatMulQ4Avx2Lanes(const Q4Activations& xa, int64_t num_tokens, const QuantRows& w,
                       const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                       int64_t row_end) {
  const Q8TokenLanes lanes = PackQ4TokenLanes(xa, 0, num_tokens);
  if (num_tokens <= 8) {
    // One lane group: each row tile serves one tile, so it is multiplied from its packed bytes
    // (an unpacked copy, stored and read back once, had been 24% of a 1.1B int4 8-sequence
    // decode profile). One core, groups of 32, 8 tokens: 768 × 768 in L2 104 → 119, 2048 ×
    // 2048 in L3 111 → 127, 5632 × 2048 from DRAM 87 → 96 GOP/s.
    struct ParamsTag;
    auto* params = reinterpret_cast<float*>(AlignedThreadScratch<ParamsTag>(
        static_cast<size_t>(avx2_lanes::kFewTokenTileRows * w.groups * 2 * 4)));
    avx2_lanes::ForEachLaneTile<kTileRows>(
        lanes, num_tokens, lanes.blocks * Q8TokenLanes::kValueBytes, row_begin, row_end,
        [&]<int kRows, int kHalves>(int64_t row, int64_t group, int tokens) {
          // The tile is where its rows first arrive from DRAM: the next tile's rows are
          // requested into L2 during its pass, to arrive while its products run (one core, 5632 ×
          // 2048 × 8 tokens from DRAM: 94 → 107 GOP/s).
          const avx2_lanes::NextTileRequests next =
              kRows == avx2_lanes::kFewTokenTileRows
                  ? avx2_lanes::NextTileRequests(w, row, kRows, row_end, xa.groups,
                                                 /*with_params=*/true)
                  : avx2_lanes::NextTileRequests{};
          for (int r = 0; r < kRows; ++r) WidenParams(w, row + r, params + r * w.groups * 2);
          float results[kRows][kLanes];
          PackedFewTokenTile<kRows, kBlocks>(lanes, tokens, xa, w, row, params, next, results);
          avx2_lanes::StoreLaneResults<kRows>(results, group, tokens, bias, out, out_stride, row);
        });
    return;
  }
  // A row tile's rows are unpacked once for all the lane groups it passes over.
  UnpackedRows unpacked{};
  int64_t unpacked_row = -1;
  int unpacked_count = 0;
  avx2_lanes::ForEachLaneTile<kTileRows>(
      lanes, num_tokens, lanes.blocks * Q8TokenLanes::kValueBytes, row_begin, row_end,
      [&]<int kRows, int kHalves>(int64_t row, int64_t group, int tokens) {
        avx2_lanes::NextTileRequests next;
        if (row != unpacked_row || kRows != unpacked_count) {
          // As in the int8 lanes: the next tile's rows are requested into L2 while this one
          // computes (one core, 5632 × 2048 × 128 from DRAM, groups of 32: 151.2 → 153.4 GOP/s).
          next = avx2_lanes::NextTileRequests(w, row, kRows, row_end, xa.groups,
                                              /*with_params=*/true);
          unpacked = UnpackRows(w, row, kRows);
          unpacked_row = row;
          unpacked_count = kRows;
        }
        float results[kRows][kLanes];
        LaneTile<kRows, kHalves, kBlocks>(lanes, group, group * kLanes, tokens, xa, unpacked, next,
                                          results);
        avx2_lanes::StoreLaneResults<kRows>(results, group, tokens, bias, out, out_stride, row);
      });
}

template void MatMulQ4Avx2Lanes<1>(const Q4Activations&, int64_t, const QuantRows&, const Weight&,
                                   float*, int64_t, int64_t, int64_t);
template void MatMulQ4Avx2Lanes<2>(const Q4Activations&, int64_t, const QuantRows&, const Weight&,
                                   float*, int64_t, int64_t, int64_t);
template void MatMulQ4Avx2Lanes<4>(const Q4Activations&, int64_t, const QuantRows&, const Weight&,
                                   float*, int64_t, int64_t, int64_t);

}  // namespace zinf::cpu
