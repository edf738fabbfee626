// MatMulFloatAvx2Panels: each output's 8 lane sums run over its columns in the portable kernel's
// order, only cut into chunks whose sums wait in memory (exact) while the tile's other tokens take
// their turn. A whole row's tile (cpu/matmul.cpp's DotTile) reads 3 rows and 4 tokens of up to
// 22 KiB each per tile, from L2 at best, and the tokens' block is cut to what L2 holds of whole
// rows (16 tokens of 5632 columns), so the weights came from DRAM again every 16 tokens. In chunks
// the tile's 3 rows stay in L1 for the block's tokens, the block's chunk in L2 for the panel's
// rows, and the block is 12 times as long. The tokens are packed per tile of 4, so that a step's
// 4 vectors are one line and no two of the tile's streams share L1 sets (rows of 2048 floats do).
// One Zen 4 core without AVX-512, 128 tokens: 2048 × 5632 50.9 → 76.5 GOP/s, 2048 × 2048
// 63.2 → 76.0 (84% of the FMA units' peak), 768 × 768 level; 1.1B f32 prefill of 512 tokens on
// 2 threads 55.5 → 73.3 tok/s.
#include "cpu/matmul_float_panels_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>

#include "cpu/dot.h"
#include "cpu/matmul.h"
#include "cpu/prefetch_region.h"
#include "cpu/tiling.h"
#include "cpu/weights_avx2.h"
#include "engine/error.h"

namespace zinf::cpu {

namespace {

constexpr int kTileRows = 3, kTileTokens = 4;  // 12 accumulators, 3 weights, 1 token vector
constexpr int kTileFloats = kTileRows * kTileTokens * 8;
constexpr int64_t kChunkColumns = 512;
constexpr int64_t kPanelRows = 48;

std::atomic<bool> shape_pinned{false};
FloatPanelShape pinned_shape;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Steps [s_begin, s_end) (8 columns each) of rows [row, row + kRows) × kTokens tokens packed as
// `tile` (step s's vector of token t at tile + (4s + t) · 8), continuing the accumulators at
// `sums` (vector t · kRows + r; zeros when `first`); kRequestEachStep: asking for a share of
// `next_tile` each step.
template <DType kDType, int kRows, int kTokens, bool kRequestEachStep>
void ChunkTile(const float* tile, const Weight& w, int64_t row, int64_t s_begin, int64_t s_end,
               bool first, float* sums, LineRequests& next_tile) {
  // Unrolled by pragmas: at -O2 GCC otherwise keeps `acc` in memory.
  __m256 acc[kRows][kTokens];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t)
      acc[r][t] = first ? _mm256_setzero_ps() : _mm256_load_ps(sums + (t * kRows + r) * 8);
  for (int64_t s = s_begin; s < s_end; ++s) {
    if constexpr (kRequestEachStep) next_tile.RequestShare();
    __m256 wv[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
      wv[r] = LoadWeights8<kDType>(w.data, (row + r) * w.cols + 8 * s);
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) {
      const __m256 xv = _mm256_load_ps(tile + (4 * s + t) * 8);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[r][t] = _mm256_fmadd_ps(xv, wv[r], acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) _mm256_store_ps(sums + (t * kRows + r) * 8, acc[r][t]);
}

template <DType kDType, int kRows, bool kRequestEachStep>
void ChunkTileTokens(int tokens, const float* tile, const Weight& w, int64_t row, int64_t s_begin,
                     int64_t s_end, bool first, float* sums, LineRequests& next_tile) {
  auto chunk_tile = [&]<int kTokens>() {
    ChunkTile<kDType, kRows, kTokens, kRequestEachStep>(tile, w, row, s_begin, s_end, first, sums,
                                                        next_tile);
  };
  switch (tokens) {
    case 4: return chunk_tile.template operator()<4>();
    case 3: return chunk_tile.template operator()<3>();
    case 2: return chunk_tile.template operator()<2>();
    case 1: return chunk_tile.template operator()<1>();
  }
}

// Tokens [first, first + count) of x, 8 columns per step for `steps` steps, as tiles of 4 tokens:
// tile j's step s at packed + (j · steps + s) · 32 floats (a last tile's missing tokens unset).
void PackTokens(const float* x, int64_t x_stride, int64_t first, int64_t count, int64_t steps,
                float* packed) {
  for (int64_t token = first; token < first + count; ++token) {
    const int64_t tile = (token - first) / kTileTokens, lane = (token - first) % kTileTokens;
    float* to = packed + tile * steps * 32 + lane * 8;
    const float* from = x + token * x_stride;
    for (int64_t s = 0; s < steps; ++s) _mm256_store_ps(to + s * 32, _mm256_loadu_ps(from + 8 * s));
  }
}

template <DType kDType>
void MatMulPanels(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                  const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                  int64_t row_end) {
  const FloatPanelShape shape = ActiveFloatPanelShape();
  constexpr int64_t kElementBytes = kDType == DType::kF32 ? 4 : 2;
  const int64_t body = w.cols / 8 * 8, steps = body / 8;
  // Chunks of chunk_columns to twice as many, all alike: rows of 768 floats in one chunk, not
  // 512 + 256 (2048 × 768 × 512 tokens 67.5 → 69.2 GOP/s, 768 × 768 72.0 → 75.4).
  const int64_t chunks = std::max<int64_t>(1, steps / (shape.chunk_columns / 8));
  const int64_t chunk_steps = std::max<int64_t>(1, (steps + chunks - 1) / chunks);
  // A panel's row tiles: 3 rows each, and at the end of a range up to 2 single rows.
  const int64_t panel_tiles = shape.panel_rows / kTileRows + kTileRows - 1;
  for (int64_t t0 = 0; t0 < num_tokens; t0 += shape.block_tokens) {
    const int64_t tokens = std::min(shape.block_tokens, num_tokens - t0);
    const int64_t tiles = (tokens + kTileTokens - 1) / kTileTokens;
    auto* packed = reinterpret_cast<float*>(
        AlignedThreadScratch<struct PackedTokens>(static_cast<size_t>(tiles * steps * 32 * 4)));
    PackTokens(x, x_stride, t0, tokens, steps, packed);
    auto* sums = reinterpret_cast<float*>(AlignedThreadScratch<struct ChunkSums>(
        static_cast<size_t>(panel_tiles * tiles * kTileFloats * 4)));
    for (int64_t p0 = row_begin; p0 < row_end; p0 += shape.panel_rows) {
      const int64_t p1 = std::min(row_end, p0 + shape.panel_rows);
      // Calls fn.template operator()<kRows>(first row, tile index) for the panel's row tiles.
      auto each_row_tile = [&](auto&& fn) {
        int64_t r = p0, i = 0;
        for (; r + kTileRows <= p1; r += kTileRows, ++i) fn.template operator()<kTileRows>(r, i);
        for (; r < p1; ++r, ++i) fn.template operator()<1>(r, i);
      };
      // At least one chunk, which sets the sums (to zeros in rows shorter than a step).
      for (int64_t s0 = 0; s0 == 0 || s0 < steps; s0 += chunk_steps) {
        const int64_t s1 = std::min(steps, s0 + chunk_steps);
        each_row_tile([&]<int kRows>(int64_t r, int64_t i) {
          // Rows in several chunks are read a chunk at a time, a piece of each row 2-11 KiB
          // apart, which the hardware prefetchers do not follow: the walk's next tile (the
          // panel's next rows, else its first rows' next chunk, else the next panel's first) is
          // requested into L2 a share per token tile. One Zen 4 core from DRAM, 5632 × 2048:
          // 8 tokens 37.7 → 45.6 GOP/s, 16 tokens 52.2 → 61.5; 128 tokens level. Rows in one
          // chunk are read in order, and the requests only cost there (8 tokens of 768: 69 → 65).
          int64_t next_row = r + kRows, next_s0 = s0, next_s1 = s1;
          if (next_row >= p1) {
            next_row = s1 < steps ? p0 : p1;
            next_s0 = s1 < steps ? s1 : 0;
            next_s1 = std::min(steps, next_s0 + chunk_steps);
          }
          const int next_rows = static_cast<int>(std::min<int64_t>(kTileRows, row_end - next_row));
          // With at most 2 token tiles (8 tokens) a share per tile is half the tile's lines at
          // once, and one Zen 1 core read only ~6.3 GB/s from DRAM: there the pass asks for a
          // line a step instead, 8 tokens 2048 × 2048 24.9 → 29.5 GOP/s (median of 5 alternating
          // runs), 2048 × 5632 1.14×, 5632 × 2048 1.16×. With more token tiles the step's request
          // cost more than it gained (32 tokens ~0.96×).
          const bool each_step = tiles <= 2 && chunks > 1;
          LineRequests next_tile;
          if (each_step && next_rows > 0) {
            next_tile = LineRequests(static_cast<const char*>(w.data) +
                                         (next_row * w.cols + 8 * next_s0) * kElementBytes,
                                     (next_s1 - next_s0) * 8 * kElementBytes,
                                     w.cols * kElementBytes, next_rows, tiles * (s1 - s0));
          }
          for (int64_t j = 0; j < tiles; ++j) {
            if (chunks > 1 && !each_step) {
              for (int q = 0; q < next_rows; ++q)
                PrefetchRegionShare(static_cast<const char*>(w.data) +
                                        ((next_row + q) * w.cols + 8 * next_s0) * kElementBytes,
                                    (next_s1 - next_s0) * 8 * kElementBytes, j, tiles);
            }
            const int count = static_cast<int>(std::min<int64_t>(4, tokens - kTileTokens * j));
            const float* tile = packed + j * steps * 32;
            float* tile_sums = sums + (i * tiles + j) * kTileFloats;
            if (each_step) {
              ChunkTileTokens<kDType, kRows, true>(count, tile, w, r, s0, s1, s0 == 0, tile_sums,
                                                   next_tile);
            } else {
              ChunkTileTokens<kDType, kRows, false>(count, tile, w, r, s0, s1, s0 == 0, tile_sums,
                                                    next_tile);
            }
          }
        });
      }
      each_row_tile([&]<int kRows>(int64_t r, int64_t i) {
        float biases[kRows];
        for (int q = 0; q < kRows; ++q) biases[q] = bias ? WeightValue(bias, r + q) : 0.0f;
        for (int64_t token = t0; token < t0 + tokens; ++token) {
          const int64_t j = (token - t0) / kTileTokens, t = (token - t0) % kTileTokens;
          const float* lanes = sums + (i * tiles + j) * kTileFloats + t * kRows * 8;
          for (int q = 0; q < kRows; ++q) {
            const float dot =
                AddDotTail(ReduceLanes(lanes + q * 8), x + token * x_stride, w, r + q, body);
            out[token * out_stride + r + q] = dot + biases[q];
          }
        }
      });
    }
  }
}

#pragma GCC pop_options

}  // namespace

FloatPanelShape ActiveFloatPanelShape() {
  if (shape_pinned.load(std::memory_order_acquire)) return pinned_shape;
  // The block: as many tokens as TokenBlockBytes holds of kChunkColumns floats each (192 on a
  // 1 MiB L2; a row cut into longer chunks, up to twice as long, overfills it by as much).
  static const FloatPanelShape sized{
      kChunkColumns,
      std::max<int64_t>(kTileTokens,
                        TokenBlockBytes() / (kChunkColumns * 4) / kTileTokens * kTileTokens),
      kPanelRows};
  return sized;
}

void PinFloatPanelShape(std::optional<FloatPanelShape> shape) {
  if (shape) {
    ZINF_CHECK(shape->chunk_columns > 0 && shape->chunk_columns % 8 == 0 &&
                   shape->block_tokens > 0 && shape->block_tokens % kTileTokens == 0 &&
                   shape->panel_rows > 0 && shape->panel_rows % kTileRows == 0,
               "float panel shape {} x {} x {}", shape->chunk_columns, shape->block_tokens,
               shape->panel_rows);
    pinned_shape = *shape;
  }
  shape_pinned.store(shape.has_value(), std::memory_order_release);
}

void MatMulFloatAvx2Panels(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                           const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                           int64_t row_end) {
  switch (w.dtype) {
    case DType::kF32:
      return MatMulPanels<DType::kF32>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin,
                                       row_end);
    case DType::kF16:
      return MatMulPanels<DType::kF16>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin,
                                       row_end);
    case DType::kBF16:
      return MatMulPanels<DType::kBF16>(x, x_stride, num_tokens, w, bias, out, out_stride,
                                        row_begin, row_end);
    case DType::kI8:
    case DType::kQ4: break;
  }
  ZINF_CHECK(false, "the float panel walk takes f32, f16 or bf16 weights, not {}",
             DTypeName(w.dtype));
}

}  // namespace zinf::cpu
