// The AVX2 int8 kernel for many tokens (prefill, batched decode): 8 or 16 tokens in the lanes, so
// that each lane holds one row and token's exact block sum and no horizontal reduction is needed.
#pragma once

#include <cstdint>

#include "cpu/q8_activations.h"
#include "engine/backend.h"

namespace zinf::cpu {

// The fewest tokens MatMulI8Avx2Lanes is used for; fewer go token by token through the one-token
// tiles of cpu/matmul_quant.cpp. One Zen 4 core, 2048 × 2048 in L3, GOP/s there / in the byte
// lanes: 7 tokens 72 / 87, 6 tokens 73 / 76 (but from DRAM 64 / 57); 1.1B and 110M int8 decode of
// 7 sequences 12-13% faster in the byte lanes.
inline constexpr int64_t kI8Avx2LaneMinTokens = 7;

// The most tokens past the last multiple of 8 that a call of more than 8 leaves to the one-token
// tiles (a pass of their own over the weights) rather than to a lane half of their own. One Zen 4
// core, 5632 × 2048 from DRAM, GOP/s in a lane half / the one-token tiles: 9 tokens 48 / 64, 11
// tokens 58 / 62, 12 tokens 63 / 66, 17 tokens 61 / 80, 20 tokens 73 / 80.
inline constexpr int64_t kI8Avx2LaneTailMaxTokens = 4;

// out[t][r] for tokens [0, num_tokens) and rows [row_begin, row_end) of int8 weights, with the
// portable kernel's bits: per block the exact int32 sum, fma'd with the token's block scale in
// block order, then times the row's scale (cpu/matmul_quant.cpp), plus the bias.
void MatMulI8Avx2Lanes(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                       const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                       int64_t row_end);

}  // namespace zinf::cpu
