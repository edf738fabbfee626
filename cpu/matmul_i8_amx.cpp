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

#include "cpu/matmul_i8_avx512.h"
#include "cpu/q8_activations.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/quant_rows.h"
#include "cpu/tiling.h"

namespace zinf::cpu {

namespace {

constexpr int kTileRows = 16;
constexpr int kGroupTokens = Q8TokenLanes::kLanes;
// Below this many tokens the 16-lane tiles are mostly padding: the AVX-512 kernel is faster.
constexpr int64_t kMinAmxTokens = 5;

// The tile configuration (palette 1): tmm0/1 A (16 rows × 32 bytes), tmm2/3 B (8 rows × 64
// bytes), tmm4/5 C (16 × 16 int32).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

TileConfig MakeTileConfig() {
  TileConfig config;
  for (int a : {0, 1}) {
    config.rows[a] = kTileRows;
    config.bytes_per_row[a] = kQ8BlockElements;
  }
  for (int b : {2, 3}) {
    config.rows[b] = 8;
    config.bytes_per_row[b] = 64;
  }
  for (int c : {4, 5}) {
    config.rows[c] = kTileRows;
    config.bytes_per_row[c] = 64;
  }
  return config;
}

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

// Rows [row, row + 16) × the tokens of `group` into results[row][token] (× the row scales).
void AmxTile(const Q8TokenLanes& lanes, int64_t group, const QuantRows& w, int64_t row,
             float (&results)[kTileRows][16]) {
  __m512 acc[kTileRows];
  for (auto& a : acc) a = _mm512_setzero_ps();
  alignas(64) int32_t sums[2][kTileRows][16];
  const int8_t* base = w.i8_row(row);
  const int64_t stride = w.row_bytes;
  const int64_t whole = w.cols / kQ8BlockElements;
  int64_t b = 0;
  for (; b + 2 <= whole; b += 2) {
    _tile_zero(4);
    _tile_loadd(0, base + b * kQ8BlockElements, stride);
    _tile_loadd(2, lanes.block(group, b), 64);
    _tile_dpbssd(4, 0, 2);
    _tile_zero(5);
    _tile_loadd(1, base + (b + 1) * kQ8BlockElements, stride);
    _tile_loadd(3, lanes.block(group, b + 1), 64);
    _tile_dpbssd(5, 1, 3);
    _tile_stored(4, sums[0], 64);
    AddBlock(sums[0], lanes.scales(group, b), acc);
    _tile_stored(5, sums[1], 64);
    AddBlock(sums[1], lanes.scales(group, b + 1), acc);
  }
  for (; b < lanes.blocks; ++b) {  // an odd last block, or a partial one (rows are not padded)
    alignas(64) int8_t padded[kTileRows][kQ8BlockElements] = {};
    const int64_t count = std::min<int64_t>(kQ8BlockElements, w.cols - b * kQ8BlockElements);
    for (int m = 0; m < kTileRows; ++m)
      std::memcpy(padded[m], w.i8_row(row + m) + b * kQ8BlockElements, static_cast<size_t>(count));
    _tile_zero(4);
    _tile_loadd(0, padded, kQ8BlockElements);
    _tile_loadd(2, lanes.block(group, b), 64);
    _tile_dpbssd(4, 0, 2);
    _tile_stored(4, sums[0], 64);
    AddBlock(sums[0], lanes.scales(group, b), acc);
  }
  for (int m = 0; m < kTileRows; ++m)
    _mm512_storeu_ps(results[m], _mm512_mul_ps(acc[m], _mm512_set1_ps(w.i8_scale(row + m))));
}

void AmxWalk(const Q8TokenLanes& lanes, int64_t num_tokens, const QuantRows& w,
             const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
             int64_t row_end) {
  static const TileConfig config = MakeTileConfig();
  _tile_loadconfig(&config);
  const int64_t group_bytes = lanes.blocks * Q8TokenLanes::kBlockBytes;
  const int64_t step = std::max<int64_t>(1, kTokenBlockBytes / group_bytes);
  for (int64_t g = 0; g < lanes.groups; g += step) {
    const int64_t g_end = std::min(lanes.groups, g + step);
    for (int64_t r = row_begin; r + kTileRows <= row_end; r += kTileRows) {
      for (int64_t group = g; group < g_end; ++group) {
        alignas(64) float results[kTileRows][16];
        AmxTile(lanes, group, w, r, results);
        const int tokens = lanes.tokens_in(group, num_tokens);
        for (int m = 0; m < kTileRows; ++m) {
          const float b = bias ? WeightValue(bias, r + m) : 0.0f;
          for (int t = 0; t < tokens; ++t)
            out[(group * kGroupTokens + t) * out_stride + r + m] = results[m][t] + b;
        }
      }
    }
  }
  _tile_release();  // so that a context switch need not save the tiles
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

void MatMulI8Amx(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                 const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                 int64_t row_end) {
  const int64_t tiled_end = row_begin + (row_end - row_begin) / kTileRows * kTileRows;
  if (num_tokens >= kMinAmxTokens && tiled_end > row_begin) {
    const QuantRows rows(w);
    const Q8Activations xq = QuantizeActivationsQ8(x, x_stride, num_tokens, w.cols, true);
    const Q8TokenLanes lanes = PackQ8TokenLanes(xq, num_tokens, kGroupTokens, 0);
    AmxWalk(lanes, num_tokens, rows, bias, out, out_stride, row_begin, tiled_end);
    row_begin = tiled_end;
  }
  if (row_begin < row_end)
    MatMulI8Avx512(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
}

}  // namespace zinf::cpu
