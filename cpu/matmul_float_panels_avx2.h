// The AVX2 float kernels' walk for several tokens: the product in column chunks over panels of
// rows, so that a tile's weights stay in L1 while the tokens pass over them and the tokens' chunk
// in L2 while the panel's rows pass over it, with the portable kernel's arithmetic (cpu/matmul.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "engine/backend.h"

namespace zinf::cpu {

// From this many tokens the AVX2 float products take the panel walk: one Zen 4 core from DRAM,
// 5632 × 2048 against whole-row tiles, 2 tokens 18.0 → 19.7 GOP/s, 4 tokens 26.4 → 30.9, 7
// 33.4 → 41.4; rows of 768 (one chunk) level (41.1 → 43.9 at 2, 70.2 → 68.4 at 4).
inline constexpr int64_t kFloatPanelMinTokens = 2;

// The walk's sizes: columns per chunk (a multiple of 8; a row's chunks are all alike, from this
// to less than twice as many), tokens per block (a multiple of 4) and rows per panel (a multiple
// of 3).
struct FloatPanelShape {
  int64_t chunk_columns = 0;
  int64_t block_tokens = 0;
  int64_t panel_rows = 0;
};

// The shape products use: pinned by PinFloatPanelShape (tests), else sized from the L2.
FloatPanelShape ActiveFloatPanelShape();
void PinFloatPanelShape(std::optional<FloatPanelShape> shape);

// MatMulRows for f32, f16 or bf16 weights at the AVX2 level (the caller checks the CPU has it).
void MatMulFloatAvx2Panels(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                           const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                           int64_t row_end);

}  // namespace zinf::cpu
