// AMX int4 tiles. Per 16 weight rows, 16 tokens and 64 values (32 in groups of 32): tmm A holds the
// rows' nibbles unpacked to bytes (a span at a time, into a scratch), tmm B the tokens' int8 values
// in lanes (cpu/q8_token_lanes.h), and tdpbusd (unsigned nibbles × signed values) adds the 16 × 16
// exact products into tmm C; a group's products accumulate in one C tile, so C ends holding the
// group sums. C goes to memory, and each row's 16 sums take the portable chain's fma with row scale ×
// token scale. Two C tiles alternate groups, so one group's products run while the previous
// group's sums are converted.
#include "cpu/matmul_q4_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/amx_tiles.h"
#include "cpu/matmul_q4_avx512.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/tiling.h"
#include "cpu/transpose_avx512.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

constexpr int kTileRows = kAmxTileRows;
constexpr int kGroupTokens = kAmxGroupTokens;
static_assert(kGroupTokens == Q8TokenLanes::kLanes);
constexpr int64_t kSpanBlocks = kAmxSpanBlocks;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,amx-tile,amx-int8")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// A row tile's parameters in f32, row-major: scales[m][g] and minimums[m][g]. A row's (scale,
// minimum) pairs are consecutive dwords, 16 groups converted at a time (F16C converts what
// F16ToF32 would).
struct RowParams {
  std::vector<float> scales, minimums;
  int64_t groups = 0;
  void Load(const QuantRows& w, int64_t row, int64_t num_groups) {
    groups = (num_groups + 15) / 16 * 16;
    scales.resize(groups * kTileRows);
    minimums.resize(groups * kTileRows);
    for (int m = 0; m < kTileRows; ++m) {
      const uint16_t* params = w.q4_params(row + m);
      for (int64_t g = 0; g < num_groups; g += 16) {
        const auto mask =
            static_cast<__mmask16>(num_groups - g >= 16 ? 0xffff : (1u << (num_groups - g)) - 1);
        const __m512i pairs = _mm512_maskz_loadu_epi32(mask, params + 2 * g);
        _mm512_storeu_ps(&scales[m * groups + g], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(pairs)));
        _mm512_storeu_ps(&minimums[m * groups + g],
                         _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(pairs, 16))));
      }
    }
  }
  float scale(int m, int64_t g) const { return scales[m * groups + g]; }
  float minimum(int m, int64_t g) const { return minimums[m * groups + g]; }
};

// acc[m] += float(sums[m]) · (row m's scale of group g × the tokens' scales).
inline __attribute__((always_inline)) void AddGroup(const int32_t (&sums)[kTileRows][16],
                                                    const RowParams& params, int64_t g,
                                                    __m512 token_scales, __m512 (&acc)[kTileRows]) {
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m) {
    const __m512 factors = _mm512_mul_ps(_mm512_set1_ps(params.scale(m, g)), token_scales);
    acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(sums[m])), factors, acc[m]);
  }
}

// The products of group g into C tile tmm4 (A tmm0, B tmm2) or, with kSecond, tmm5 (A tmm1, B
// tmm3): zeroed, then one tdpbusd per `tile_values` values (the loaded tile configuration's K: 64
// for groups of 64 and more, two blocks of lanes as one B tile). (GCC's tile intrinsics take
// register numbers as literals.)
template <bool kSecond>
inline __attribute__((always_inline)) void IssueGroup(const Q8TokenLanes& lanes, int64_t group,
                                                      const uint8_t* unpacked, int64_t stride,
                                                      int64_t first_element, int64_t g,
                                                      int group_size, int tile_values) {
  ZINF_TILE_MEMORY_BARRIER();
  if constexpr (kSecond) {
    _tile_zero(5);
  } else {
    _tile_zero(4);
  }
  for (int64_t e = g * group_size; e < (g + 1) * group_size; e += tile_values) {
    const std::byte* values = lanes.block(group, e / kQ4BlockElements);
    if constexpr (kSecond) {
      _tile_loadd(1, unpacked + (e - first_element), stride);
      _tile_loadd(3, values, 64);
      _tile_dpbusd(5, 1, 3);
    } else {
      _tile_loadd(0, unpacked + (e - first_element), stride);
      _tile_loadd(2, values, 64);
      _tile_dpbusd(4, 0, 2);
    }
  }
}

// The next row tile's f16 parameters, then its nibbles, requested into L2 a few lines per group
// while this tile's products run: loading and unpacking them next would otherwise wait on DRAM for
// every line (TinyLlama int4 at 8 sequences spent 42% of its time in the unpacking, and half of
// the rest of the walk in the parameters' loads).
struct NextTilePrefetch {
  struct Range {
    const char* next = nullptr;
    const char* end = nullptr;
  };
  Range ranges[2];
  int64_t lines_per_group = 0;

  NextTilePrefetch() = default;
  NextTilePrefetch(const QuantRows& w, int64_t row, int64_t groups) {
    const auto* params = reinterpret_cast<const char*>(w.q4_params(row));
    const auto* nibbles = reinterpret_cast<const char*>(w.row(row));
    ranges[0] = {params, params + kTileRows * groups * 2 * sizeof(uint16_t)};
    ranges[1] = {nibbles, nibbles + kTileRows * w.row_bytes};
    const int64_t lines = (ranges[0].end - params + ranges[1].end - nibbles) / 64 + 2;
    lines_per_group = (lines + groups - 1) / groups;
  }
  void Step() {
    int64_t left = lines_per_group;
    for (Range& range : ranges) {
      for (; left > 0 && range.next < range.end; --left, range.next += 64)
        _mm_prefetch(range.next, _MM_HINT_T1);
    }
  }
};

// Groups [g_begin, g_end) of one row tile × one token group, continuing the chains in `chains`
// (row m's 16 token lanes). Group g's products go to tmm4 or tmm5 by parity; group g − 1's C tile
// is stored and added while g's run.
void AmxSpan(const Q8TokenLanes& lanes, int64_t group, const Q4Activations& xa, int64_t token,
             int tokens, const uint8_t* unpacked, int64_t stride, const RowParams& params,
             int tile_values, int64_t g_begin, int64_t g_end, NextTilePrefetch* prefetch,
             float (&chains)[kTileRows][16]) {
  const auto token_mask = static_cast<__mmask16>((1u << tokens) - 1);
  const int64_t first_element = g_begin * xa.group_size;  // unpacked's first column
  __m512 acc[kTileRows];
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m) acc[m] = _mm512_load_ps(chains[m]);
  alignas(64) int32_t sums[kTileRows][16];
  // No lambdas here: acc captured by reference would live in memory, and every tile barrier would
  // then store and reload it.
  for (int64_t g = g_begin; g <= g_end; ++g) {
    const bool even = (g - g_begin) % 2 == 0;  // group g's products go to tmm4, else tmm5
    if (g < g_end) {
      if (prefetch != nullptr) prefetch->Step();
      if (even) {
        IssueGroup<false>(lanes, group, unpacked, stride, first_element, g, xa.group_size,
                          tile_values);
      } else {
        IssueGroup<true>(lanes, group, unpacked, stride, first_element, g, xa.group_size,
                         tile_values);
      }
    }
    if (g == g_begin) continue;
    if (even) {  // group g − 1 went to tmm5
      _tile_stored(5, sums, 64);
    } else {
      _tile_stored(4, sums, 64);
    }
    ZINF_TILE_MEMORY_BARRIER();
    const __m512 token_scales =
        _mm512_maskz_loadu_ps(token_mask, xa.scales + (g - 1) * xa.tokens + token);
    AddGroup(sums, params, g - 1, token_scales, acc);
  }
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m) _mm512_store_ps(chains[m], acc[m]);
}

// The finished chains of rows [row, row + 16) × the `tokens` tokens from `token` into out: plus
// the minimums' chains (MinimumSum's order), then the bias.
void StoreChains(const float (&chains)[kTileRows][16], const Q4Activations& xa, int64_t token,
                 int tokens, const RowParams& params, const float (&bias)[kTileRows], int64_t row,
                 float* out, int64_t out_stride) {
  const auto token_mask = static_cast<__mmask16>((1u << tokens) - 1);
  // Kept apart from the array Transpose16 takes by reference: GCC would otherwise store every
  // chain to the stack on each group.
  __m512 minimum_sums[kTileRows];
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m) minimum_sums[m] = _mm512_setzero_ps();
  for (int64_t g = 0; g < xa.groups; ++g) {
    const __m512 factors = _mm512_maskz_loadu_ps(token_mask, xa.group_min_factors(g) + token);
#pragma GCC unroll 16
    for (int m = 0; m < kTileRows; ++m) {
      minimum_sums[m] =
          _mm512_fmadd_ps(_mm512_set1_ps(params.minimum(m, g)), factors, minimum_sums[m]);
    }
  }
  __m512 acc[kTileRows];
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m)
    acc[m] = _mm512_add_ps(_mm512_load_ps(chains[m]), minimum_sums[m]);
  Transpose16(acc);
  const __m512 bias_rows = _mm512_load_ps(bias);
  for (int t = 0; t < tokens; ++t)
    _mm512_storeu_ps(out + (token + t) * out_stride + row, _mm512_add_ps(acc[t], bias_rows));
}

// Rows [row_begin, row_end) (a multiple of 16) × tokens [0, num_tokens). Per block of token
// groups (sized for L2) and row tile: the groups in spans, each span's rows unpacked and then
// passed over by every token group of the block while they stay in L1; the chains wait in memory
// between spans (same fma order). The next row tile's nibbles are prefetched meanwhile.
void AmxWalk(const Q8TokenLanes& lanes, const Q4Activations& xa, int64_t num_tokens,
             const QuantRows& w, const Weight& bias, float* out, int64_t out_stride,
             int64_t row_begin, int64_t row_end) {
  const int tile_values = xa.group_size % 64 == 0 ? 64 : kQ4BlockElements;
  _tile_loadconfig(tile_values == 64 ? &AmxTileConfigFor<64>() : &AmxTileConfigFor<32>());
  const int64_t blocks_per_group = xa.group_size / kQ4BlockElements;
  const int64_t span_groups = std::max<int64_t>(1, kSpanBlocks / blocks_per_group);
  const int64_t span_blocks = span_groups * blocks_per_group;
  const int64_t stride = span_blocks * kQ4BlockElements;  // the unpacked span's rows
  struct alignas(64) Chains {
    float lanes[kTileRows][16];
  };
  thread_local std::vector<Chains> chains;  // grown only; over-aligned: allocated 64-byte aligned
  thread_local RowParams params;
  auto* unpacked = reinterpret_cast<uint8_t*>(
      AlignedThreadScratch<RowParams>(static_cast<size_t>(kTileRows * stride)));
  const int64_t step = LaneGroupsPerTokenBlock(lanes.blocks * Q8TokenLanes::kBlockBytes);
  for (int64_t first = 0; first < lanes.groups; first += step) {
    const int64_t last = std::min(lanes.groups, first + step);
    if (static_cast<int64_t>(chains.size()) < last - first) chains.resize(last - first);
    for (int64_t r = row_begin; r + kTileRows <= row_end; r += kTileRows) {
      params.Load(w, r, xa.groups);
      NextTilePrefetch prefetch;
      if (r + 2 * kTileRows <= row_end) prefetch = NextTilePrefetch(w, r + kTileRows, xa.groups);
      for (int64_t group = first; group < last; ++group) chains[group - first] = Chains{};
      for (int64_t g = 0; g < xa.groups; g += span_groups) {
        const int64_t g_end = std::min(xa.groups, g + span_groups);
        // Unpacked span by span, just before its products: still in L1 when the tiles load it.
        UnpackQ4Rows(w, r, kTileRows, unpacked, stride, g * blocks_per_group,
                     g_end * blocks_per_group);
        for (int64_t group = first; group < last; ++group) {
          AmxSpan(lanes, group, xa, group * kGroupTokens, lanes.tokens_in(group, num_tokens),
                  unpacked, stride, params, tile_values, g, g_end,
                  group == first ? &prefetch : nullptr, chains[group - first].lanes);
        }
      }
      alignas(64) float bias_rows[kTileRows];
      for (int m = 0; m < kTileRows; ++m) bias_rows[m] = bias ? WeightValue(bias, r + m) : 0.0f;
      for (int64_t group = first; group < last; ++group) {
        StoreChains(chains[group - first].lanes, xa, group * kGroupTokens,
                    lanes.tokens_in(group, num_tokens), params, bias_rows, r, out, out_stride);
      }
    }
  }
  _tile_release();  // so that a context switch need not save the tiles
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

void MatMulQ4Amx(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                 int64_t out_stride, int64_t row_begin, int64_t row_end) {
  const int64_t tiled_end = row_begin + (row_end - row_begin) / kTileRows * kTileRows;
  // A last group of fewer than min_tokens tokens would cost more as a whole tile pass than in
  // at most two passes of the AVX-512 kernel's 16-row tiles, or with fewer than kMinAmxTokens,
  // its pair tiles. (From three passes on, the tile pass wins: TinyLlama int4-g64 at 7 and 8
  // sequences, Emerald Rapids.)
  const Q4RowTiles row_tiles = Q4RowTilesFor(xa.group_size);
  const int64_t two_passes = std::min(row_tiles.tokens, 2 * row_tiles.tokens_per_pass);
  const int64_t min_tokens = std::max(kMinAmxTokens, two_passes + 1);
  const int64_t rest = xa.tokens % kGroupTokens;
  const int64_t amx_tokens = rest < min_tokens ? xa.tokens - rest : xa.tokens;
  if (amx_tokens >= min_tokens && tiled_end > row_begin) {
    const Q8TokenLanes lanes = PackQ4TokenLanes(xa, 0, amx_tokens);
    AmxWalk(lanes, xa, amx_tokens, w, bias, out, out_stride, row_begin, tiled_end);
    MatMulQ4Avx512(xa, amx_tokens, xa.tokens, w, bias, out, out_stride, row_begin, tiled_end);
    row_begin = tiled_end;
  }
  MatMulQ4Avx512(xa, 0, xa.tokens, w, bias, out, out_stride, row_begin, row_end);
}

}  // namespace zinf::cpu
