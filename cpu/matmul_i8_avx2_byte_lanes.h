// The AVX2 int8 kernel for calls of at most 8 tokens (batched decode): its operands kept in 8
// bits, where the kernel for more (cpu/matmul_i8_avx2_lanes.cpp) widens each row tile's weights to
// 16 bits first — for one group of tokens that widening cost as much as the products (110M int8,
// 8 sequences: 28% of the time).
#pragma once

#include <cstdint>

#include "cpu/q8_activations.h"
#include "engine/backend.h"

namespace zinf::cpu {

// MatMulI8Avx2Lanes' bits for num_tokens ≤ 8.
void MatMulI8Avx2ByteLanes(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                           const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                           int64_t row_end);

}  // namespace zinf::cpu
