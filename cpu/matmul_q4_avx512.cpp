// The AVX-512 int4 kernel. Each product is the portable chain: per group, the exact int32 sum of
// nibble × int8 products, then acc = fma(float(sum), row scale × token scale, acc), plus the
// minimums' chain. Few tokens (≤ 8) take row-pair tiles: two rows' unpacked blocks per zmm
// against a token's block broadcast to both halves, vpdpbusd leaving 8 lane sums per half, eight
// registers reduced together into 16 group sums. More tokens take token lanes: 16 tokens' values
// in the lanes (cpu/q8_token_lanes.h, the AMX B layout) against a dword of unpacked nibbles
// broadcast per vpdpbusd, which leaves one row's 16 group sums with no reduction. 1-4 tokens take
// the 16-row tiles of cpu/matmul_q4_avx512_tiles.h; 7-8 tokens, where the start-up probe says so,
// 8 token lanes of 256-bit registers (both token-lane widths: cpu/matmul_q4_avx512_lanes.h).
#include "cpu/matmul_q4_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "cpu/lane_tile_store.h"
#include "cpu/matmul_q4_avx512_lanes.h"
#include "cpu/matmul_q4_avx512_tiles.h"
#include "cpu/reduce_avx512.h"
#include "cpu/tile_prefetch.h"
#include "cpu/tiling.h"
#include "cpu/transpose_avx512.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

using namespace q4_avx512;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// The tile's row scales of group g, row r in lane r (F16C converts what F16ToF32 would).
template <int kRows>
ZINF_Q4_INLINE __m512 TileRowScales(const uint16_t* const (&params)[kRows], int64_t g) {
  alignas(64) float scales[16] = {};
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) scales[r] = _cvtsh_ss(params[r][2 * g]);
  return _mm512_load_ps(scales);
}

// MinimumSum's chain for kRows rows × kTokens (≤ 8) tokens from `token`: per row, tokens in lanes.
template <int kRows, int kTokens>
ZINF_Q4_INLINE void MinimumChains(const Q4Activations& xa, int64_t token, const QuantRows& w,
                                  int64_t row, float (&minimums)[kRows][8]) {
  const auto token_mask = static_cast<__mmask8>((1u << kTokens) - 1);
  __m256 chains[kRows];
#pragma GCC unroll 32
  for (int r = 0; r < kRows; ++r) chains[r] = _mm256_setzero_ps();
  for (int64_t g = 0; g < xa.groups; ++g) {
    const __m256 factors = _mm256_maskz_loadu_ps(token_mask, xa.group_min_factors(g) + token);
#pragma GCC unroll 32
    for (int r = 0; r < kRows; ++r) {
      const __m256 minimum = _mm256_set1_ps(_cvtsh_ss(w.q4_params(row + r)[2 * g + 1]));
      chains[r] = _mm256_fmadd_ps(minimum, factors, chains[r]);
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < kRows; ++r) _mm256_storeu_ps(minimums[r], chains[r]);
}

// Rows [row, row + kRows) × tokens [token, token + kTokens), groups of kBlocks blocks. Pair p of
// token t is product a = p · kTokens + t; ReduceEight puts products 8i.. into acc[i], lane by
// lane as ReducedRegister / ReducedHalf say. An odd last row is paired with itself, its second
// half discarded. `prefetch`, when set, is the next tile's first row.
template <int kRows, int kTokens, int kBlocks>
void PairTile(const Q4Activations& xa, int64_t token, const QuantRows& w, int64_t row,
              const uint8_t* prefetch, float (&results)[kRows][kTokens]) {
  constexpr int kPairs = (kRows + 1) / 2;
  constexpr int kCount = kPairs * kTokens, kChunks = (kCount + 7) / 8;
  const uint8_t* rows[2 * kPairs];
#pragma GCC unroll 32
  for (int i = 0; i < 2 * kPairs; ++i) rows[i] = w.row(row + std::min(i, kRows - 1));
  const uint16_t* params[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) params[r] = w.q4_params(row + r);
  const uint16_t* next_params = prefetch != nullptr ? w.q4_params(row + kRows) : nullptr;
  __m512 acc[kChunks];
  __m512i row_index[kChunks], token_index[kChunks];
#pragma GCC unroll 8
  for (int i = 0; i < kChunks; ++i) {
    acc[i] = _mm512_setzero_ps();
    alignas(64) int rows_of[16], tokens_of[16];
    for (int lane = 0; lane < 16; ++lane) {
      const int a = std::min(8 * i + ReducedRegister(lane), kCount - 1);
      const int r = std::min(2 * (a / kTokens) + ReducedHalf(lane), kRows - 1);
      rows_of[lane] = r;
      tokens_of[lane] = a % kTokens;
    }
    row_index[i] = _mm512_load_si512(rows_of);
    token_index[i] = _mm512_load_si512(tokens_of);
  }
  for (int64_t g = 0; g < xa.groups; ++g) {
    if (prefetch != nullptr) PrefetchGroupShare<kRows, kBlocks>(prefetch, next_params, g);
    __m512i wv[kBlocks][kPairs];
#pragma GCC unroll 16
    for (int j = 0; j < kBlocks; ++j) {
#pragma GCC unroll 16
      for (int p = 0; p < kPairs; ++p)
        wv[j][p] = UnpackPair(rows[2 * p], rows[2 * p + 1], g * kBlocks + j);
    }
    __m512i sums[kChunks * 8];
#pragma GCC unroll 8
    for (int i = kCount; i < kChunks * 8; ++i) sums[i] = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) {
      const int8_t* x = xa.token_values(token + t) + g * kBlocks * kQ4BlockElements;
      __m512i xv[kBlocks];
#pragma GCC unroll 16
      for (int j = 0; j < kBlocks; ++j) xv[j] = BroadcastTokenBlock(x, j);
#pragma GCC unroll 16
      for (int p = 0; p < kPairs; ++p) {
        __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[0][p], xv[0]);
#pragma GCC unroll 16
        for (int j = 1; j < kBlocks; ++j) sum = _mm512_dpbusd_epi32(sum, wv[j][p], xv[j]);
        sums[p * kTokens + t] = sum;
      }
    }
    const __m512 token_scales = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << kTokens) - 1),
                                                      xa.scales + g * xa.tokens + token);
    const __m512 row_scales = TileRowScales<kRows>(params, g);
#pragma GCC unroll 8
    for (int i = 0; i < kChunks; ++i) {
      const __m512 factors = _mm512_mul_ps(_mm512_permutexvar_ps(row_index[i], row_scales),
                                           _mm512_permutexvar_ps(token_index[i], token_scales));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ReduceEight(sums + 8 * i)), factors, acc[i]);
    }
  }
  float minimums[kRows][8];
  MinimumChains<kRows, kTokens>(xa, token, w, row, minimums);
  ForEachPairTileLane<kRows, kTokens>(
      acc, [&](int r, int t, float value) { results[r][t] = value + minimums[r][t]; });
}

// count f16 values to floats (F16C converts what F16ToF32 would).
void WidenF16(const uint16_t* values, int64_t count, float* out) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(
        out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + i))));
  }
  for (; i < count; ++i) out[i] = _cvtsh_ss(values[i]);
}

#undef ZINF_Q4_INLINE
#pragma GCC diagnostic pop
#pragma GCC pop_options

// Rows [row, row + rows) (at most kLaneRows) prepared for the token-lane tiles, in buffers owned by
// the calling thread (valid until its next call): nibbles unpacked, parameters widened to floats.
UnpackedQ4Rows PrepareLaneRows(const QuantRows& w, int64_t row, int rows) {
  struct ParamsTag;
  const int64_t stride = Q4UnpackedStride(w), params = w.groups * 2;
  auto* bytes = reinterpret_cast<uint8_t*>(
      AlignedThreadScratch<UnpackedQ4Rows>(static_cast<size_t>(rows * stride)));
  auto* floats = reinterpret_cast<float*>(
      AlignedThreadScratch<ParamsTag>(static_cast<size_t>(rows * params * 4)));
  UnpackQ4Rows(w, row, rows, bytes, stride);
  WidenF16(w.q4_params(row), rows * params, floats);
  return UnpackedQ4Rows{bytes, stride, floats, params};
}

// Pair tiles: up to 8 tokens, 4 rows (up to kDecodeTokens: DecodeTile's 16). Token lanes: 8 rows.
constexpr int kPairTokens = 8, kFewTokenRows = 4, kLaneRows = 8;
// The fewest tokens the 256-bit token lanes take, where chosen: below it the 16-row tiles' one or
// two passes win (Zen 4, 2048 × 5632, groups of 32: 0.5-0.9× at 3-5 tokens, 1.2-1.3× at 8).
constexpr int kYmmLaneMinTokens = 7;

template <int kBlocks>
struct Walk {
  const Q4Activations& xa;
  const QuantRows& w;
  const Weight& bias;
  float* out;
  int64_t out_stride;
  bool ymm_lanes;  // kYmmLaneMinTokens-8 tokens in 256-bit lanes (Q4FewTokens::kYmmLanes)

  // Tokens [token, token + count) (count ≤ kPairTokens) over rows [r, r + kRows).
  template <int kRows>
  void PairTiles(int64_t r, int64_t token, int64_t count, const uint8_t* prefetch) const {
    [&]<int... kCount>(std::integer_sequence<int, kCount...>) {
      ((count == kCount + 1 ? PairTokens<kRows, kCount + 1>(r, token, prefetch) : void()), ...);
    }
    (std::make_integer_sequence<int, kPairTokens>{});
  }
  template <int kRows, int kTokens>
  void PairTokens(int64_t r, int64_t token, const uint8_t* prefetch) const {
    float results[kRows][kTokens];
    PairTile<kRows, kTokens, kBlocks>(xa, token, w, r, prefetch, results);
    StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, token);
  }
  template <int kRows>
  void PairRows(int64_t token, int64_t count, int64_t row_begin, int64_t row_end) const {
    const bool prefetch = PrefetchNextTile(DType::kQ4, count);
    int64_t r = row_begin;
    for (; r + kRows <= row_end; r += kRows) {
      const uint8_t* next = prefetch && r + 2 * kRows <= row_end ? w.row(r + kRows) : nullptr;
      PairTiles<kRows>(r, token, count, next);
    }
    for (; r + 2 <= row_end; r += 2) PairTiles<2>(r, token, count, nullptr);
    if (r < row_end) PairTiles<1>(r, token, count, nullptr);
  }

  // DecodeTile's token count: as many as keep a group's unpacked blocks in registers.
  static constexpr int kDecodeTokens = kBlocks == 1 ? 4 : kBlocks == 2 ? 3 : 1;
  // The most tokens the 16-row tiles take: up to 8 in passes of 3-4 beat the 4-row pair tiles;
  // one token at a time does not.
  static constexpr int kRowTileTokens = kDecodeTokens >= 3 ? kPairTokens : kDecodeTokens;

  // Tokens [token, token + count) (count ≤ kPairTokens) over rows [row_begin, row_end) in 16-row
  // tiles, each taking the tokens kDecodeTokens at a time, its rows still in L1 for the next. A
  // lone token's tiles take rows a stride apart (ForEachStridedTile: long sequential reads);
  // several tokens' tiles consecutive rows (strided, 8 tokens decoded no faster: 0.96× as fast
  // over 5 alternating rounds, 1.1B shape, groups of 64).
  void DecodeRows(int64_t token, int64_t count, int64_t row_begin, int64_t row_end) const {
    const bool prefetch = PrefetchNextTile(DType::kQ4, count);
    int64_t r = row_begin;
    if (count == 1) {
      r = ForEachStridedTile<kDecodeRows>(
          row_begin, row_end, [&](int64_t first, int64_t step, bool last) {
            DecodeTokensOf<1>(token, TileRows{first, step, prefetch && !last ? 1 : 0});
          });
    }
    for (; r + kDecodeRows <= row_end; r += kDecodeRows) {
      const TileRows tile{r, 1, prefetch && r + 2 * kDecodeRows <= row_end ? kDecodeRows : 0};
      for (int64_t t = token; t < token + count; t += kDecodeTokens)
        DecodeTokens(t, std::min<int64_t>(kDecodeTokens, token + count - t), tile);
    }
    PairRows<2>(token, count, r, row_end);
  }
  void DecodeTokens(int64_t token, int64_t count, const TileRows& tile) const {
    [&]<int... kCount>(std::integer_sequence<int, kCount...>) {
      ((count == kCount + 1 ? DecodeTokensOf<kCount + 1>(token, tile) : void()), ...);
    }
    (std::make_integer_sequence<int, kDecodeTokens>{});
  }
  template <int kTokens>
  void DecodeTokensOf(int64_t token, const TileRows& tile) const {
    float results[kDecodeRows][kTokens];
    if constexpr (kTokens == 1) {
      if (xa.groups * kBlocks % 4 == 0) {
        DecodeQuadTile<kBlocks>(xa, token, w, tile, results);
      } else {
        DecodeTile<kBlocks, 1>(xa, token, w, tile, results);
      }
    } else {
      DecodeTile<kBlocks, kTokens>(xa, token, w, tile, results);
    }
    StoreTile<kDecodeRows, kTokens>(results, bias, out, out_stride, tile.row, token, tile.row_step);
  }

  // Rows [r, r + kRows) unpacked (once per block of lane groups), then lane groups
  // [group_begin, group_end) over them.
  template <int kRows>
  void LaneRows(const Q8TokenLanes& lanes, const float* lane_factors, int64_t token_begin,
                int64_t token_end, int64_t r, bool prefetch, int64_t group_begin,
                int64_t group_end) const {
    const UnpackedQ4Rows unpacked = PrepareLaneRows(w, r, kRows);
    for (int64_t group = group_begin; group < group_end; ++group) {
      const int64_t token = token_begin + group * Q8TokenLanes::kLanes;
      const int tokens = lanes.tokens_in(group, token_end - token_begin);
      const float* factors = lane_factors + group * xa.groups * 32;
      float results[kRows][16];
      TokenLaneTile<kRows, 16>(lanes.block(group, 0), xa, LaneFactors{factors, factors + 16, 32},
                               tokens, unpacked, w, r, group == group_begin && prefetch, results);
      StoreLaneTile<kRows, 16>(results, tokens, bias, out, out_stride, r, token);
    }
  }

  // Every row tile over the lane groups in blocks that stay in L2 while the rows pass over them,
  // as the int8 kernel's: all 512 tokens of a 5632-wide input (2.9 MB) had come from L3 for every
  // 8 rows (Zen 4, 1.1B int4 pp512 15% slower than pp128, where int8 was level).
  void LaneWalk(const Q8TokenLanes& lanes, int64_t token_begin, int64_t token_end,
                int64_t row_begin, int64_t row_end) const {
    const float* factors =
        PackFactorsByTokenGroup(xa, token_begin, token_end, Q8TokenLanes::kLanes);
    const int64_t step = LaneGroupsPerTokenBlock(lanes.blocks * Q8TokenLanes::kValueBytes);
    for (int64_t g = 0; g < lanes.groups; g += step) {
      const int64_t g_end = std::min(lanes.groups, g + step);
      int64_t r = row_begin;
      for (; r + kLaneRows <= row_end; r += kLaneRows) {
        LaneRows<kLaneRows>(lanes, factors, token_begin, token_end, r, r + 2 * kLaneRows <= row_end,
                            g, g_end);
      }
      for (; r < row_end; ++r)
        LaneRows<1>(lanes, factors, token_begin, token_end, r, false, g, g_end);
    }
  }

  // Tokens [token, token + count) (count ≤ 8) in the lanes of 256-bit registers, over rows
  // [row_begin, row_end) unpacked kLaneRows at a time.
  void YmmLaneRows(int64_t token, int count, int64_t row_begin, int64_t row_end) const {
    const int64_t blocks = xa.groups * kBlocks;
    std::byte* packed = AlignedThreadScratch<YmmTokenLanes>(
        static_cast<size_t>(blocks * YmmTokenLanes::kBlockBytes));
    const YmmTokenLanes lanes = PackYmmTokenLanes(xa, token, count, packed);
    int64_t r = row_begin;
    for (; r + kLaneRows <= row_end; r += kLaneRows)
      YmmLaneTileRows<kLaneRows>(lanes, token, count, r, r + 2 * kLaneRows <= row_end);
    for (; r < row_end; ++r) YmmLaneTileRows<1>(lanes, token, count, r, false);
  }
  template <int kRows>
  void YmmLaneTileRows(const YmmTokenLanes& lanes, int64_t token, int count, int64_t r,
                       bool prefetch) const {
    const UnpackedQ4Rows unpacked = PrepareLaneRows(w, r, kRows);
    float results[kRows][8];
    TokenLaneTile<kRows, 8>(lanes.data, xa, GroupMajorFactors(xa, token), count, unpacked, w, r,
                            prefetch, results);
    StoreLaneTile<kRows, 8>(results, count, bias, out, out_stride, r, token);
  }

  void Run(int64_t token_begin, int64_t token_end, int64_t row_begin, int64_t row_end) const {
    const int64_t count = token_end - token_begin;
    if (count <= 0 || row_begin >= row_end) return;
    if (ymm_lanes && count >= kYmmLaneMinTokens && count <= YmmTokenLanes::kLanes)
      return YmmLaneRows(token_begin, static_cast<int>(count), row_begin, row_end);
    if (count <= kRowTileTokens) return DecodeRows(token_begin, count, row_begin, row_end);
    if (count <= kPairTokens)
      return PairRows<kFewTokenRows>(token_begin, count, row_begin, row_end);
    LaneWalk(PackQ4TokenLanes(xa, token_begin, token_end), token_begin, token_end, row_begin,
             row_end);
  }
};

}  // namespace

Q4RowTiles Q4RowTilesFor(int64_t group_size) {
  switch (group_size / kQ4BlockElements) {
    case 1: return {Walk<1>::kRowTileTokens, Walk<1>::kDecodeTokens};
    case 2: return {Walk<2>::kRowTileTokens, Walk<2>::kDecodeTokens};
    default: return {Walk<4>::kRowTileTokens, Walk<4>::kDecodeTokens};
  }
}

int64_t Q4UnpackedStride(const QuantRows& w) { return (w.row_bytes * 2 + 63) / 64 * 64; }

#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl")
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
void UnpackQ4Rows(const QuantRows& w, int64_t row, int rows, uint8_t* out, int64_t stride,
                  int64_t block_begin, int64_t block_end) {
  const int64_t blocks = std::min(block_end, w.row_bytes / 16);
  // Two blocks per step: [b0 | b0 | b1 | b1] in 128-bit lanes, the second copy of each shifted
  // right by 4 (16-bit shifts; the mask drops the neighbour byte's bits): 64 unpacked bytes.
  const __m512i shifts = _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0, 0,
                                          0x0004000400040004, 0x0004000400040004, 0, 0);
  const __m512i spread = _mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0);
  const __m512i low_nibbles = _mm512_set1_epi8(0x0f);
  for (int r = 0; r < rows; ++r) {
    const uint8_t* nibbles = w.row(row + r);
    uint8_t* bytes = out + r * stride;
    auto unpack = [&](__m256i two_blocks) {
      return _mm512_and_si512(
          _mm512_srlv_epi16(_mm512_permutexvar_epi64(spread, _mm512_castsi256_si512(two_blocks)),
                            shifts),
          low_nibbles);
    };
    int64_t b = block_begin;
    // Plain loads and stores, no masks: a masked store costs Zen 4 tens of cycles (with one per
    // pair this loop took 45% of the int4 token-lane products' time there).
    for (; b + 2 <= blocks; b += 2) {
      _mm512_storeu_si512(
          bytes + (b - block_begin) * kQ4BlockElements,
          unpack(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(nibbles + b * 16))));
    }
    // A last odd block: half the bytes read, half the unpacked ones written.
    if (b < blocks) {
      const __m128i one = _mm_loadu_si128(reinterpret_cast<const __m128i*>(nibbles + b * 16));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(bytes + (b - block_begin) * kQ4BlockElements),
                          _mm512_castsi512_si256(unpack(_mm256_zextsi128_si256(one))));
    }
  }
}
#pragma GCC diagnostic pop
#pragma GCC pop_options

Q8TokenLanes PackQ4TokenLanes(const Q4Activations& xa, int64_t token_begin, int64_t token_end) {
  Q8Activations view;
  view.blocks = xa.groups * xa.group_size / kQ8BlockElements;
  view.values = xa.token_values(token_begin);
  view.scales = nullptr;  // the int4 kernels read the group scales from xa
  return PackQ8TokenLanes(view, token_end - token_begin, Q8TokenLanes::kLanes, 0);
}

void MatMulQ4Avx512With(const Q4Activations& xa, int64_t token_begin, int64_t token_end,
                        const QuantRows& w, const Weight& bias, float* out, int64_t out_stride,
                        int64_t row_begin, int64_t row_end, Q4FewTokens few_tokens) {
  const bool ymm = few_tokens == Q4FewTokens::kYmmLanes;
  switch (xa.group_size / kQ4BlockElements) {
    case 1:
      return Walk<1>{xa, w, bias, out, out_stride, ymm}.Run(token_begin, token_end, row_begin,
                                                            row_end);
    case 2:
      return Walk<2>{xa, w, bias, out, out_stride, ymm}.Run(token_begin, token_end, row_begin,
                                                            row_end);
    default:
      return Walk<4>{xa, w, bias, out, out_stride, ymm}.Run(token_begin, token_end, row_begin,
                                                            row_end);
  }
}

void MatMulQ4Avx512(const Q4Activations& xa, int64_t token_begin, int64_t token_end,
                    const QuantRows& w, const Weight& bias, float* out, int64_t out_stride,
                    int64_t row_begin, int64_t row_end) {
  MatMulQ4Avx512With(xa, token_begin, token_end, w, bias, out, out_stride, row_begin, row_end,
                     CurrentQ4FewTokens(xa.group_size));
}

}  // namespace zinf::cpu
