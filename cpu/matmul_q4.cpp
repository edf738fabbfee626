// The int4 kernels at the portable and AVX2 levels, and the dispatch to AVX-512
// (cpu/matmul_q4_avx512.cpp) and AMX (cpu/matmul_q4_amx.cpp). A block of 32 elements is 16
// bytes: element j in the low nibble of byte j, element j + 16 in the high one; nibbles are
// unsigned, so products with the int8 activations need no sign trick (AVX2:
// _mm256_maddubs_epi16(nibbles, x), at most 2 · 15 · 127 per int16 pair, then _mm256_madd_epi16
// into the lanes' int32 sums).
#include "cpu/matmul_q4.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "cpu/avx2_lane_walk.h"
#include "cpu/dot.h"
#include "cpu/halves_avx2.h"
#include "cpu/matmul_q4_amx.h"
#include "cpu/matmul_q4_avx2_lanes.h"
#include "cpu/matmul_q4_avx512.h"
#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "cpu/reduce_avx2.h"
#include "cpu/shared_activations.h"
#include "cpu/tiling.h"
#include "engine/dtype.h"
#include "engine/error.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// Σ over the groups of fma(minimum, minimum factor, ·) for one row and token.
float MinimumSum(const QuantRows& w, int64_t r, const Q4Activations& xa, int64_t t) {
  const uint16_t* params = w.q4_params(r);
  float sum = 0.0f;
  for (int64_t g = 0; g < xa.groups; ++g)
    sum = std::fma(F16ToF32(params[2 * g + 1]), xa.min_factor(t, g), sum);
  return sum;
}

float DotQ4Portable(const Q4Activations& xa, int64_t t, const QuantRows& w, int64_t r) {
  const int8_t* xq = xa.token_values(t);
  const uint8_t* nibbles = w.row(r);
  const uint16_t* params = w.q4_params(r);
  float acc = 0.0f;
  for (int64_t g = 0; g < xa.groups; ++g) {
    int32_t sum = 0;  // exact: at most 128 · 15 · 127 in magnitude, so exact as a float too
    for (int64_t k = g * xa.group_size; k < (g + 1) * xa.group_size; ++k)
      sum += Q4Nibble(nibbles, k) * xq[k];
    const float factor = F16ToF32(params[2 * g]) * xa.scale(t, g);
    acc = std::fma(static_cast<float>(sum), factor, acc);
  }
  return acc + MinimumSum(w, r, xa, t);
}

void MatMulQ4Portable(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                      int64_t out_stride, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float b = bias ? WeightValue(bias, r) : 0.0f;
    for (int64_t t = 0; t < xa.tokens; ++t)
      out[t * out_stride + r] = DotQ4Portable(xa, t, w, r) + b;
  }
}

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Block b of a row as 32 bytes of nibbles in element order: the 16 bytes in both halves, the high
// half shifted down by 4 (one load, one shift and one mask; no lane insert).
inline __m256i UnpackBlock(const uint8_t* row, int64_t b) {
  const __m256i bytes =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + b * 16)));
  return _mm256_and_si256(_mm256_srlv_epi64(bytes, _mm256_setr_epi64x(0, 0, 4, 4)),
                          _mm256_set1_epi8(0x0f));
}

// A group's products as int16 pair sums: maddubs of a block's nibbles and int8 values gives pairs
// of at most 2 · 15 · 127 = 3810 in magnitude, so the pairs of up to 8 blocks add up exactly in
// int16 (≤ 30480 < 2^15), and one madd per group and product widens them to int32.
static_assert(*std::max_element(std::begin(kQ4GroupSizes), std::end(kQ4GroupSizes)) <=
              8 * kQ4BlockElements);

// Block b's int16 pair sums of kRows rows × kTokens tokens into pairs[r · kTokens + t]: stored for
// a group's first block, added to for the others.
template <int kRows, int kTokens, bool kFirst>
inline __attribute__((always_inline)) void Q4BlockPairs(const uint8_t* const (&rows)[kRows],
                                                        const Q4Activations& xa, int64_t token,
                                                        int64_t b,
                                                        __m256i (&pairs)[kRows * kTokens]) {
  __m256i wv[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) wv[r] = UnpackBlock(rows[r], b);
#pragma GCC unroll 4
  for (int t = 0; t < kTokens; ++t) {
    const __m256i xv = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(xa.token_values(token + t) + b * kQ4BlockElements));
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256i block_pairs = _mm256_maddubs_epi16(wv[r], xv);
      __m256i& sum = pairs[r * kTokens + t];
      sum = kFirst ? block_pairs : _mm256_add_epi16(sum, block_pairs);
    }
  }
}

// kRows rows × kTokens tokens; product i = r · kTokens + t lands in lane i % 8 of acc[i / 8]. Per
// group, each product's exact sum (int16 pair sums over the group's blocks, widened once), eight
// products' at once (SumEach), then fma'd with their factors. The loops carry unroll pragmas so
// that GCC keeps the tile in registers (see matmul_quant.cpp). The full 2 × 4 tile (`token` a
// multiple of 4) reads its factors from `quad_factors` (PackFactorsByTokenGroup's, 4 tokens to a
// group), the others from xa.
// kBlocks, the blocks per group, is a template argument: with a runtime count GCC kept the tile's
// pair sums, a token vector and the accumulator on the stack (g32 at 0.74× int8's speed, Zen 4).
template <int kRows, int kTokens, int kBlocks>
void Q4Tile(const Q4Activations& xa, int64_t token, const QuantRows& w, int64_t row,
            int64_t row_step, const float* quad_factors, float (&results)[kRows][kTokens]) {
  constexpr bool kFullTile = kRows == 2 && kTokens == 4;
  const float* tile_factors = kFullTile ? quad_factors + token / 4 * xa.groups * 8 : nullptr;
  constexpr int kProducts = kRows * kTokens, kGroups = (kProducts + 7) / 8;
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* rows[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) rows[r] = w.row(row + r * row_step);
  __m256 acc[kGroups];
#pragma GCC unroll 4
  for (int i = 0; i < kGroups; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t g = 0; g < xa.groups; ++g) {
    __m256i pairs[kProducts];
    const int64_t first = g * kBlocks;
    Q4BlockPairs<kRows, kTokens, true>(rows, xa, token, first, pairs);
#pragma GCC unroll 4
    for (int b = 1; b < kBlocks; ++b)
      Q4BlockPairs<kRows, kTokens, false>(rows, xa, token, first + b, pairs);
    __m256i sums[kGroups * 8];
#pragma GCC unroll 32
    for (int i = 0; i < kGroups * 8; ++i)
      sums[i] = i < kProducts ? _mm256_madd_epi16(pairs[i], ones) : _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int i = 0; i < kGroups; ++i) {
      __m256 factors;
      if constexpr (kFullTile) {
        // The full tile (prefill's): [row 0's scale × 4 tokens' | row 1's × the same 4], the
        // products one vector multiply, where converting and multiplying each lane apart had
        // cost more than the tile's integer work.
        const __m128 token_scales = _mm_loadu_ps(tile_factors + g * 8);
        const __m256 row_scales =
            _mm256_setr_m128(_mm_set1_ps(_cvtsh_ss(w.q4_params(row)[2 * g])),
                             _mm_set1_ps(_cvtsh_ss(w.q4_params(row + row_step)[2 * g])));
        factors = _mm256_mul_ps(row_scales, _mm256_set_m128(token_scales, token_scales));
      } else {
        alignas(32) float lanes[8];
#pragma GCC unroll 8
        for (int lane = 0; lane < 8; ++lane) {
          const int product = 8 * i + lane;
          lanes[lane] = product < kProducts
                            ? _cvtsh_ss(w.q4_params(row + product / kTokens * row_step)[2 * g]) *
                                  xa.scale(token + product % kTokens, g)
                            : 0.0f;
        }
        factors = _mm256_load_ps(lanes);
      }
      const __m256i group_sums = SumEach(reinterpret_cast<const __m256i(&)[8]>(sums[8 * i]));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(group_sums), factors, acc[i]);
    }
  }
  // The minimums: per row, MinimumSum's chain over the groups with the tile's tokens in the lanes
  // (the same fma per row and token, in the same order; F16C converts what F16ToF32 would).
  const __m256i token_lanes =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(kTokens), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256 minimums[kRows];
  for (int r = 0; r < kRows; ++r) minimums[r] = _mm256_setzero_ps();
  for (int64_t g = 0; g < xa.groups; ++g) {
    const float* group_factors =
        kFullTile ? tile_factors + g * 8 + 4 : xa.group_min_factors(g) + token;
    const __m256 factors = _mm256_maskload_ps(group_factors, token_lanes);
    for (int r = 0; r < kRows; ++r) {
      const __m256 minimum = _mm256_set1_ps(_cvtsh_ss(w.q4_params(row + r * row_step)[2 * g + 1]));
      minimums[r] = _mm256_fmadd_ps(minimum, factors, minimums[r]);
    }
  }
  alignas(32) float lanes[kGroups * 8];
  for (int i = 0; i < kGroups; ++i) _mm256_store_ps(lanes + 8 * i, acc[i]);
  for (int r = 0; r < kRows; ++r) {
    alignas(32) float per_token[8];
    _mm256_store_ps(per_token, minimums[r]);
    for (int t = 0; t < kTokens; ++t) results[r][t] = lanes[r * kTokens + t] + per_token[t];
  }
}

// Groups [g0, g0 + count) (count ≤ 8) of 8 rows: scales[j] lane r = the scale of group g0 + j in
// the row whose parameters are params[r], minimums likewise. Each row's 8 (scale, minimum) pairs
// of f16s are transposed as 16-bit words, three levels of unpacks leaving per 128 bits the 8 rows'
// scales or minimums of one group (groups j and j + 4 in the two halves), which F16C converts
// (what F16ToF32 and _cvtsh_ss give). A dword transpose and a gather per group had cost a third
// more shuffles (with the above, one core: groups of 32 67.7 → 73.5 GOP/s, of 64 84.9 → 89.8).
inline void LaneOrderedParams8(const uint16_t* const (&params)[8], int64_t g0, int count,
                               __m256 (&scales)[8], __m256 (&minimums)[8]) {
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i rows[8];  // per 128 bits: s0 m0 s1 m1 s2 m2 s3 m3 (groups g0 .. g0 + 3, then + 4 ..)
  // Whole chunks of 8 groups load plainly: a masked load costs several times more on Zen 4.
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    const auto* at = reinterpret_cast<const int*>(params[r] + 2 * g0);
    rows[r] = count == 8 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at))
                         : _mm256_maskload_epi32(at, mask);
  }
  // Per 128 bits, quads[q][k] (rows 4q .. 4q + 3): group k's 4 scales, then its 4 minimums.
  __m256i quads[2][4];
#pragma GCC unroll 2
  for (int q = 0; q < 2; ++q) {
    const __m256i* four = rows + 4 * q;
    const __m256i groups01_a = _mm256_unpacklo_epi16(four[0], four[1]);  // s0 s0 m0 m0 s1 s1 m1 m1
    const __m256i groups23_a = _mm256_unpackhi_epi16(four[0], four[1]);
    const __m256i groups01_b = _mm256_unpacklo_epi16(four[2], four[3]);
    const __m256i groups23_b = _mm256_unpackhi_epi16(four[2], four[3]);
    quads[q][0] = _mm256_unpacklo_epi32(groups01_a, groups01_b);
    quads[q][1] = _mm256_unpackhi_epi32(groups01_a, groups01_b);
    quads[q][2] = _mm256_unpacklo_epi32(groups23_a, groups23_b);
    quads[q][3] = _mm256_unpackhi_epi32(groups23_a, groups23_b);
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m256i group_scales = _mm256_unpacklo_epi64(quads[0][k], quads[1][k]);
    const __m256i group_minimums = _mm256_unpackhi_epi64(quads[0][k], quads[1][k]);
    scales[k] = _mm256_cvtph_ps(_mm256_castsi256_si128(group_scales));
    scales[k + 4] = _mm256_cvtph_ps(_mm256_extracti128_si256(group_scales, 1));
    minimums[k] = _mm256_cvtph_ps(_mm256_castsi256_si128(group_minimums));
    minimums[k + 4] = _mm256_cvtph_ps(_mm256_extracti128_si256(group_minimums, 1));
  }
}

// Row `row`'s int16 sums over the block pairs [p, p + kPairs): one 32-byte load holds a pair, its
// low nibbles the blocks' elements 0-15 and its high nibbles 16-31, against the token's blocks
// split the same way (x_low / x_high: the pair's first block in the low 128 bits), so each 128-bit
// half's 8 lanes sum to one block's products. A lane gathers at most 2 · 2 · 15 · 128 = 7680 per
// pair, kPairs · 7680 in all.
template <int kPairs>
inline __attribute__((always_inline)) __m256i RowPairWords(const uint8_t* row, int64_t p,
                                                           const __m256i (&x_low)[kPairs],
                                                           const __m256i (&x_high)[kPairs]) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  __m256i sums;
#pragma GCC unroll 4
  for (int b = 0; b < kPairs; ++b) {
    __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * (p + b)));
    // In a register: GCC 12 otherwise stores the load to the stack and reloads it as the memory
    // operand of both nibbles' instructions (as in cpu/matmul_q4_avx512_tiles.h).
    asm("" : "+x"(packed));
    const __m256i low = _mm256_and_si256(packed, nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
    const __m256i pair = _mm256_add_epi16(_mm256_maddubs_epi16(low, x_low[b]),
                                          _mm256_maddubs_epi16(high, x_high[b]));
    sums = b == 0 ? pair : _mm256_add_epi16(sums, pair);
  }
  return sums;
}

// Two rows' RowPairWords as 128-bit halves of [row a's, row b's] partial sums, and four rows'
// (two such pairs) as [row 0, row 1, row 2, row 3]'s block sums. Neighbouring int16 lanes are
// added (hadd) for as long as the sums stay below 2^15 (30720 at most: two levels for one pair,
// one for two), then widened by one madd per two rows' lanes, then dword hadds: where a madd per
// row widened the sums first, four times the multiplier work for one pair and twice for two, the
// same hadds (one core, one token, 2048 × 2048 in L3, Zen 4 without AVX-512: groups of 32 65.6 →
// 67.7 GOP/s, of 64 81.5 → 84.9, of 128 level).
template <int kPairs>
inline __attribute__((always_inline)) __m256i TwoRowSums(__m256i a, __m256i b) {
  static_assert(kPairs == 1 || kPairs == 2);
  if constexpr (kPairs == 1) return _mm256_hadd_epi16(a, b);                // 7680 → 15360
  return _mm256_madd_epi16(_mm256_hadd_epi16(a, b), _mm256_set1_epi16(1));  // 15360 → 30720
}
template <int kPairs>
inline __attribute__((always_inline)) __m256i FourRowSums(__m256i rows01, __m256i rows23) {
  if constexpr (kPairs == 1)  // 15360 → 30720
    return _mm256_madd_epi16(_mm256_hadd_epi16(rows01, rows23), _mm256_set1_epi16(1));
  return _mm256_hadd_epi32(rows01, rows23);
}

// The block sums of 8 rows for the two blocks of each pair of [p, p + kPairs): `low` lane r is
// row r's sum over the pairs' first blocks, `high` over their second blocks. The rows are reduced
// four at a time (integer adds: any grouping gives the same sums), so that few registers are
// live: with all 8 rows' sums live GCC kept the tile's float accumulator on the stack, a store
// forward in every group's chain.
template <int kPairs>
inline __attribute__((always_inline)) void EightRowPairSums(const uint8_t* const (&rows)[8],
                                                            const int8_t* x, int64_t p,
                                                            __m256i& low, __m256i& high) {
  __m256i x_low[kPairs], x_high[kPairs];
#pragma GCC unroll 4
  for (int b = 0; b < kPairs; ++b) {
    const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64 * (p + b)));
    const __m256i second =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64 * (p + b) + 32));
    x_low[b] = LowHalves(first, second);
    x_high[b] = HighHalves(first, second);
  }
  auto two_rows = [&](int r) __attribute__((always_inline)) {
    return TwoRowSums<kPairs>(RowPairWords<kPairs>(rows[r], p, x_low, x_high),
                              RowPairWords<kPairs>(rows[r + 1], p, x_low, x_high));
  };
  auto four_rows = [&](int r) __attribute__((always_inline)) {
    return FourRowSums<kPairs>(two_rows(r), two_rows(r + 2));  // per 128 bits: rows r .. r + 3
  };
  const __m256i h0 = four_rows(0);
  const __m256i h1 = four_rows(4);
  low = LowHalves(h0, h1);
  high = HighHalves(h0, h1);
}

// One token over 8 rows (row, row + row_step, …): Q4Tile's products, group sums and float steps,
// with the rows in the lanes, so each 8 groups' parameters of the 8 rows are converted together
// where Q4Tile converts them one product at a time (16 scalar conversions per group against 128
// bytes of nibbles: one-token decode at the avx2 level ran at ~10 tok/s on the 1.1B shape). The
// blocks go two per load and two per reduction (EightRowPairSums). kBlocks as in Q4Tile.
template <int kBlocks>
void Q4DecodeTile(const Q4Activations& xa, int64_t token, const QuantRows& w, int64_t row,
                  int64_t row_step, float (&results)[8][1]) {
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* rows[8];
  const uint16_t* params[8];
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    rows[r] = w.row(row + r * row_step);
    params[r] = w.q4_params(row + r * row_step);
  }
  const int8_t* x = xa.token_values(token);
  __m256 acc = _mm256_setzero_ps(), minimum_chain = _mm256_setzero_ps();
  auto add_group = [&](__m256i sums, int64_t g, __m256 scales, __m256 minimums)
      __attribute__((always_inline)) {
    const __m256 factors = _mm256_mul_ps(scales, _mm256_set1_ps(xa.scale(token, g)));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), factors, acc);
    minimum_chain =
        _mm256_fmadd_ps(minimums, _mm256_set1_ps(xa.min_factor(token, g)), minimum_chain);
  };
  for (int64_t g0 = 0; g0 < xa.groups; g0 += 8) {
    const int count = static_cast<int>(std::min<int64_t>(8, xa.groups - g0));
    __m256 scales[8], minimums[8];
    LaneOrderedParams8(params, g0, count, scales, minimums);
    int j = 0;
    if constexpr (kBlocks == 1) {  // a block pair is two groups
      for (; j + 2 <= count; j += 2) {
        __m256i low, high;
        EightRowPairSums<1>(rows, x, (g0 + j) / 2, low, high);
        add_group(low, g0 + j, scales[j], minimums[j]);
        add_group(high, g0 + j + 1, scales[j + 1], minimums[j + 1]);
      }
      if (j < count) {  // an odd last group: its block alone
        __m256i pairs[8], dwords[8];
        Q4BlockPairs<8, 1, true>(rows, xa, token, g0 + j, pairs);
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) dwords[r] = _mm256_madd_epi16(pairs[r], ones);
        add_group(SumEach(dwords), g0 + j, scales[j], minimums[j]);
      }
    } else {  // a group is kBlocks / 2 block pairs
      for (; j < count; ++j) {
        __m256i low, high;
        EightRowPairSums<kBlocks / 2>(rows, x, (g0 + j) * kBlocks / 2, low, high);
        add_group(_mm256_add_epi32(low, high), g0 + j, scales[j], minimums[j]);
      }
    }
  }
  alignas(32) float products[8], minimum_sums[8];
  _mm256_store_ps(products, acc);
  _mm256_store_ps(minimum_sums, minimum_chain);
  for (int r = 0; r < 8; ++r) results[r][0] = products[r] + minimum_sums[r];
}

template <int kBlocks>
void MatMulQ4Avx2Blocks(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                        int64_t out_stride, int64_t row_begin, int64_t row_end) {
  // A few tokens past whole lane halves (9, 17, 25 …) go through the one-token tiles below.
  const int64_t tail = avx2_lanes::OneTokenTail(xa.tokens, kQ4Avx2LaneTailMaxTokens);
  int64_t first_token = 0;
  if (xa.tokens >= kQ4Avx2LaneMinTokens) {
    first_token = xa.tokens - tail;
    MatMulQ4Avx2Lanes<kBlocks>(xa, first_token, w, bias, out, out_stride, row_begin, row_end);
    if (tail == 0) return;
  }
  const int64_t tokens = xa.tokens - first_token;
  const float* quad_factors = tokens >= 4 ? PackFactorsByTokenGroup(xa, 0, xa.tokens, 4) : nullptr;
  auto tile = [&]<int kRows, int kTokens>(int64_t r, int64_t t, int64_t row_step) {
    float results[kRows][kTokens];
    if constexpr (kRows == 8 && kTokens == 1) {
      Q4DecodeTile<kBlocks>(xa, first_token + t, w, r, row_step, results);
    } else {
      Q4Tile<kRows, kTokens, kBlocks>(xa, first_token + t, w, r, row_step, quad_factors, results);
    }
    StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, first_token + t, row_step);
  };
  // Up to 5 tokens (or the tail), each through the one-token tiles (8 rows); leftover rows in
  // 2 × 4 tiles, whose eight group sums reduce together into one register.
  ForEachTile<2, 4, 8>(tokens, row_begin, row_end, xa.groups * xa.group_size + 8, tile,
                       OneTokenTileMaxTokens(DType::kQ4, CpuIsa::kAvx2));
}

void MatMulQ4Avx2(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                  int64_t out_stride, int64_t row_begin, int64_t row_end) {
  switch (xa.group_size) {
    case 32: return MatMulQ4Avx2Blocks<1>(xa, w, bias, out, out_stride, row_begin, row_end);
    case 64: return MatMulQ4Avx2Blocks<2>(xa, w, bias, out, out_stride, row_begin, row_end);
    case 128: return MatMulQ4Avx2Blocks<4>(xa, w, bias, out, out_stride, row_begin, row_end);
  }
  ZINF_CHECK(false, "int4 group size {} (the kernels take 32, 64 or 128)", xa.group_size);
}

#pragma GCC pop_options

}  // namespace

void MatMulQ4(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
              const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
              int64_t row_end, CpuIsa isa, uint64_t x_version, const SharedActivations* shared) {
  const QuantRows rows(w);
  const Q4Activations xa = shared && shared->Serves(x, x_stride, num_tokens, w, isa)
                               ? shared->q4
                               : PrepareQ4Activations(x, x_stride, num_tokens, w.cols, w.group_size,
                                                      isa != CpuIsa::kPortable, x_version);
  if (isa == CpuIsa::kAmx) {
    MatMulQ4Amx(xa, rows, bias, out, out_stride, row_begin, row_end);
  } else if (isa >= CpuIsa::kAvx512) {
    MatMulQ4Avx512(xa, 0, xa.tokens, rows, bias, out, out_stride, row_begin, row_end);
  } else if (isa == CpuIsa::kAvx2) {
    MatMulQ4Avx2(xa, rows, bias, out, out_stride, row_begin, row_end);
  } else {
    MatMulQ4Portable(xa, rows, bias, out, out_stride, row_begin, row_end);
  }
}

}  // namespace zinf::cpu
