// AMX int8 tiles. Per 16 weight rows, 16 tokens and block of 32: tmm A holds the rows' 32 bytes
// as they lie in the file (stride: the row length), tmm B the tokens' values in lanes
// (cpu/q8_token_lanes.h, unbiased), and one tdpbssd leaves the 16 × 16 exact block sums in tmm C
// (signed × signed: −128 weights too). C goes to memory, and each row's 16 sums take the portable
// chain's fma with the tokens' block scales. Two C tiles alternate blocks so that one product runs
// while the other's sums are converted.
#include "cpu/matmul_i8_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/amx_tiles.h"
#include "cpu/matmul_i8_avx512.h"
#include "cpu/q8_activations.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/quant_rows.h"
#include "cpu/tiling.h"
#include "cpu/transpose_avx512.h"

namespace zinf::cpu {

namespace {

constexpr int kTileRows = kAmxTileRows;
constexpr int kGroupTokens = kAmxGroupTokens;
static_assert(kGroupTokens == Q8TokenLanes::kLanes);
// How far ahead (in blocks) AmxSpan prefetches its weight rows and token lanes.
constexpr int64_t kPrefetchBlocks = 4;
constexpr int64_t kSpanBlocks = kAmxSpanBlocks;

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,amx-tile,amx-int8")
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source, which
// -W(maybe-)uninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// acc[m] += float(sums[m]) · scales, per row m of a stored C tile.
inline __attribute__((always_inline)) void AddBlock(const int32_t (&sums)[kTileRows][16],
                                                    const float* scales, __m512 (&acc)[kTileRows]) {
  const __m512 scale = _mm512_load_ps(scales);
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m) {
    acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(sums[m])), scale, acc[m]);
  }
}

// A 16-row tile's weights as AmxSpan reads them: the rows where they lie, but a partial last
// block (rows are not padded) copied into a zeroed tile.
struct RowTile {
  const int8_t* base;
  int64_t stride;
  int64_t whole;  // blocks read from the rows themselves
  alignas(64) int8_t padded[kTileRows][kQ8BlockElements];

  RowTile(const QuantRows& w, int64_t row)
      : base(w.i8_row(row)), stride(w.row_bytes), whole(w.cols / kQ8BlockElements) {
    if (whole * kQ8BlockElements == w.cols) return;
    std::memset(padded, 0, sizeof(padded));
    const auto count = static_cast<size_t>(w.cols - whole * kQ8BlockElements);
    for (int m = 0; m < kTileRows; ++m)
      std::memcpy(padded[m], w.i8_row(row + m) + whole * kQ8BlockElements, count);
  }
  const int8_t* block(int64_t b) const {
    return b < whole ? base + b * kQ8BlockElements : &padded[0][0];
  }
  int64_t block_stride(int64_t b) const { return b < whole ? stride : kQ8BlockElements; }
};

// Blocks [begin, end) of one row tile × one token group, continuing the chains in `chains`
// (row m's 16 token lanes). Software-pipelined, two C tiles alternating (tile registers are not
// renamed): block b's product is issued, then block b − 1's C tile stored, then block b − 2's
// stored sums take their fma, so no step waits on the one just before it.
void AmxSpan(const Q8TokenLanes& lanes, int64_t group, const RowTile& tile, int64_t begin,
             int64_t end, float (&chains)[kTileRows][16]) {
  __m512 acc[kTileRows];
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m) acc[m] = _mm512_load_ps(chains[m]);
  alignas(64) int32_t sums[2][kTileRows][16];
  for (int64_t b = begin; b < end + 2; b += 2) {
    // Every other block: a row's 64-byte line mostly holds two blocks (the next one's start is
    // fetched by the following prefetch).
    if (b + kPrefetchBlocks < std::min(end, tile.whole)) {
#pragma GCC unroll 16
      for (int m = 0; m < kTileRows; ++m)
        _mm_prefetch(
            reinterpret_cast<const char*>(tile.block(b + kPrefetchBlocks) + m * tile.stride),
            _MM_HINT_T0);
    }
    if (b + kPrefetchBlocks < end) {
      const char* next = reinterpret_cast<const char*>(lanes.block(group, b + kPrefetchBlocks));
#pragma GCC unroll 16
      for (int line = 0; line < 2 * Q8TokenLanes::kValueBytes / 64; ++line)
        _mm_prefetch(next + 64 * line, _MM_HINT_T0);
      const char* next_scales =
          reinterpret_cast<const char*>(lanes.scales(group, b + kPrefetchBlocks));
      _mm_prefetch(next_scales, _MM_HINT_T0);
      _mm_prefetch(next_scales + Q8TokenLanes::kScaleBytes, _MM_HINT_T0);
    }
    if (b < end) {
      ZINF_TILE_MEMORY_BARRIER();
      _tile_zero(4);
      _tile_loadd(0, tile.block(b), tile.block_stride(b));
      _tile_loadd(2, lanes.block(group, b), 64);
      _tile_dpbssd(4, 0, 2);
    }
    const bool odd_block_issued = b > begin && b <= end;  // block b − 1, in tile 5
    if (odd_block_issued) {
      _tile_stored(5, sums[1], 64);
      ZINF_TILE_MEMORY_BARRIER();
    }
    if (b >= begin + 2) AddBlock(sums[0], lanes.scales(group, b - 2), acc);
    if (b + 1 < end) {
      ZINF_TILE_MEMORY_BARRIER();
      _tile_zero(5);
      _tile_loadd(1, tile.block(b + 1), tile.block_stride(b + 1));
      _tile_loadd(3, lanes.block(group, b + 1), 64);
      _tile_dpbssd(5, 1, 3);
    }
    if (b < end) {
      _tile_stored(4, sums[0], 64);
      ZINF_TILE_MEMORY_BARRIER();
    }
    if (odd_block_issued) AddBlock(sums[1], lanes.scales(group, b - 1), acc);
  }
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m) _mm512_store_ps(chains[m], acc[m]);
}

// The finished chains of rows [row, row + 16) × `tokens` tokens of `group` into out: × the row
// scales, + the bias.
void StoreChains(const float (&chains)[kTileRows][16], const QuantRows& w, int64_t row,
                 const float (&bias)[kTileRows], int64_t group, int tokens, float* out,
                 int64_t out_stride) {
  __m512 acc[kTileRows];
#pragma GCC unroll 16
  for (int m = 0; m < kTileRows; ++m)
    acc[m] = _mm512_mul_ps(_mm512_load_ps(chains[m]), _mm512_set1_ps(w.i8_scale(row + m)));
  Transpose16(acc);
  const __m512 bias_rows = _mm512_load_ps(bias);
  float* first = out + group * kGroupTokens * out_stride + row;
  for (int t = 0; t < tokens; ++t)
    _mm512_storeu_ps(first + t * out_stride, _mm512_add_ps(acc[t], bias_rows));
}

// Rows [row_begin, row_end) (a multiple of 16) × every token. Per block of token groups (sized
// for L2) and row tile, the blocks go in spans whose rows stay in L1 while every group of the
// block passes over them; the chains wait in memory between spans (same fma order).
void AmxWalk(const Q8TokenLanes& lanes, int64_t num_tokens, const QuantRows& w, const Weight& bias,
             float* out, int64_t out_stride, int64_t row_begin, int64_t row_end) {
  _tile_loadconfig(&AmxBlockTileConfig());
  const int64_t step = LaneGroupsPerTokenBlock(lanes.blocks * Q8TokenLanes::kBlockBytes);
  struct alignas(64) Chains {
    float lanes[kTileRows][16];
  };
  thread_local std::vector<Chains> chains;  // over-aligned: allocated 64-byte aligned
  for (int64_t g = 0; g < lanes.groups; g += step) {
    const int64_t g_end = std::min(lanes.groups, g + step);
    if (static_cast<int64_t>(chains.size()) < g_end - g) chains.resize(g_end - g);
    for (int64_t r = row_begin; r + kTileRows <= row_end; r += kTileRows) {
      const RowTile tile(w, r);
      for (int64_t group = g; group < g_end; ++group) chains[group - g] = Chains{};
      for (int64_t span = 0; span < lanes.blocks; span += kSpanBlocks) {
        const int64_t span_end = std::min(lanes.blocks, span + kSpanBlocks);
        for (int64_t group = g; group < g_end; ++group) {
          AmxSpan(lanes, group, tile, span, span_end, chains[group - g].lanes);
        }
      }
      alignas(64) float bias_rows[kTileRows];
      for (int m = 0; m < kTileRows; ++m) bias_rows[m] = bias ? WeightValue(bias, r + m) : 0.0f;
      for (int64_t group = g; group < g_end; ++group) {
        StoreChains(chains[group - g].lanes, w, r, bias_rows, group,
                    lanes.tokens_in(group, num_tokens), out, out_stride);
      }
    }
  }
  _tile_release();  // so that a context switch need not save the tiles
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

void MatMulI8Amx(const Q8Activations& xq, int64_t num_tokens, const Weight& w, const Weight& bias,
                 float* out, int64_t out_stride, int64_t row_begin, int64_t row_end) {
  const int64_t tiled_end = row_begin + (row_end - row_begin) / kTileRows * kTileRows;
  // A last group of fewer than kMinAmxTokens tokens would cost a whole tile pass: those go to the
  // AVX-512 kernel.
  const int64_t rest = num_tokens % kGroupTokens;
  const int64_t amx_tokens = rest < kMinAmxTokens ? num_tokens - rest : num_tokens;
  if (amx_tokens >= kMinAmxTokens && tiled_end > row_begin) {
    const QuantRows rows(w);
    const Q8TokenLanes lanes = PackQ8TokenLanes(xq, amx_tokens, kGroupTokens, 0);
    AmxWalk(lanes, amx_tokens, rows, bias, out, out_stride, row_begin, tiled_end);
    if (amx_tokens < num_tokens) {
      MatMulI8Avx512(xq.from(amx_tokens), num_tokens - amx_tokens, w, bias,
                     out + amx_tokens * out_stride, out_stride, row_begin, tiled_end);
    }
    row_begin = tiled_end;
  }
  if (row_begin < row_end)
    MatMulI8Avx512(xq, num_tokens, w, bias, out, out_stride, row_begin, row_end);
}

}  // namespace zinf::cpu
