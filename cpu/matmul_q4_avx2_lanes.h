// The AVX2 int4 kernel for many tokens (prefill, batched decode): 8 or 16 tokens in the lanes,
// each lane holding one row and token's exact group sum, so no horizontal reduction is needed.
#pragma once

#include <cstdint>

#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "engine/backend.h"

namespace zinf::cpu {

// The fewest tokens MatMulQ4Avx2Lanes is used for; fewer go token by token through the one-token
// tiles of cpu/matmul_q4.cpp. One Zen 4 core, 2048 × 2048 in L3, GOP/s, those tiles / the lanes:
// groups of 32, 5 tokens 78 / 81, 6 tokens 78 / 96; groups of 128, 5 tokens 117 / 76, 6 tokens
// 118 / 115 (from DRAM 100 / 96), 8 tokens 118 / 152. The 2 × 4 tiles had taken 2-7 tokens at
// 22-123 GOP/s, 2, 3, 5, 6 and 7 tokens at a third to two thirds of the one-token rate.
inline constexpr int64_t kQ4Avx2LaneMinTokens = 6;

// The most tokens past the last multiple of 8 that a call of more than 8 leaves to the one-token
// tiles (a pass of their own over the weights) rather than to a lane half of their own. One Zen 4
// core, 5632 × 2048 from DRAM, groups of 32, GOP/s in a lane half / the one-token tiles: 9 tokens
// 65 / 98, 11 tokens 77 / 89, 17 tokens 83 / 112; 12 tokens 86 / 89 (groups of 128: 99 / 117);
// 13 tokens 91 / 87.
inline constexpr int64_t kQ4Avx2LaneTailMaxTokens = 4;

// out[t][r] for tokens [0, num_tokens) of xa and rows [row_begin, row_end), with the portable
// kernel's bits: per group the exact int32 sum, acc = fma(float(sum), row scale × token scale,
// acc) and the minimums' own chain in group order, added at the end, plus the bias. kBlocks: the
// blocks per group (1, 2 or 4; why a template argument: the tile's comment).
template <int kBlocks>
void MatMulQ4Avx2Lanes(const Q4Activations& xa, int64_t num_tokens, const QuantRows& w,
                       const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                       int64_t row_end);

}  // namespace zinf::cpu
