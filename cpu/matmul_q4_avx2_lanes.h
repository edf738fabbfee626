// The AVX2 int4 kernel for many tokens (prefill, batched decode): 8 or 16 tokens in the lanes,
// each lane holding one row and token's exact group sum, so no horizontal reduction is needed.
#pragma once

#include <cstdint>

#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "engine/backend.h"

namespace zinf::cpu {

// The fewest tokens MatMulQ4Avx2Lanes is used for (fewer take the 2 × 4 tiles of
// cpu/matmul_q4.cpp).
inline constexpr int64_t kQ4Avx2LaneMinTokens = 8;

// out[t][r] for tokens [0, xa.tokens) and rows [row_begin, row_end), with the portable kernel's
// bits: per group the exact int32 sum, acc = fma(float(sum), row scale × token scale, acc) and
// the minimums' own chain in group order, added at the end, plus the bias. kBlocks: the blocks
// per group (1, 2 or 4; why a template argument: the tile's comment).
template <int kBlocks>
void MatMulQ4Avx2Lanes(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                       int64_t out_stride, int64_t row_begin, int64_t row_end);

}  // namespace zinf::cpu
