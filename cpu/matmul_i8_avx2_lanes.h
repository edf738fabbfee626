// The AVX2 int8 kernel for many tokens (prefill, batched decode): 8 or 16 tokens in the lanes, so
// that each lane holds one row and token's exact block sum and no horizontal reduction is needed.
#pragma once

#include <cstdint>

#include "cpu/q8_activations.h"
#include "engine/backend.h"

namespace zinf::cpu {

// The fewest tokens MatMulI8Avx2Lanes is used for; fewer go token by token through the one-token
// tiles of cpu/matmul_quant.cpp (one Zen 4 core, 2048 × 2048 in L3: 7 tokens 71 GOP/s there, 74 in
// the byte lanes; 8 tokens 84 / 85).
inline constexpr int64_t kI8Avx2LaneMinTokens = 8;

// out[t][r] for tokens [0, num_tokens) and rows [row_begin, row_end) of int8 weights, with the
// portable kernel's bits: per block the exact int32 sum, fma'd with the token's block scale in
// block order, then times the row's scale (cpu/matmul_quant.cpp), plus the bias.
void MatMulI8Avx2Lanes(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                       const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                       int64_t row_end);

}  // namespace zinf::cpu
