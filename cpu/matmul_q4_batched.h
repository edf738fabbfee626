// int4 products of many tokens at the float kernel's rate: some weight rows at a time are
// dequantized into a per-thread f32 scratch — the values DequantizeRow gives — and multiplied by
// cpu::MatMulRows, whose operation sequence per output element is the int4 kernels' (8 fma lanes
// in element order, ReduceLanes, the tail one fma at a time, + bias), so the bits are the same.
#pragma once

#include <cstdint>

#include "cpu/isa.h"
#include "engine/backend.h"

namespace zinf::cpu {

// Below this many tokens each dequantized row serves too few products to repay writing it out
// (decode stays on the int4 kernels, which read the nibbles straight from memory).
inline constexpr int64_t kQ4BatchedMinTokens = 8;

// w.dtype is kQ4; isa at least kAvx2; see MatMulRows for the arguments.
void MatMulQ4Batched(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                     const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                     int64_t row_end, CpuIsa isa);

}  // namespace zinf::cpu
