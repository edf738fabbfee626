// The int4-weight matrix product at the kAmx level: the group sums of 16 rows × 16 tokens from
// AMX tile products (unpacked nibbles × int8 tokens in lanes), the rest as at kAvx512, so
// bit-identical to the portable kernel (cpu/matmul_q4.cpp). Call it only when BestCpuIsa() is
// kAmx.
#pragma once

#include <cstdint>

#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "engine/backend.h"

namespace zinf::cpu {

// A few tokens, and the rows left over from 16-row tiles, run the AVX-512 kernel.
void MatMulQ4Amx(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                 int64_t out_stride, int64_t row_begin, int64_t row_end);

}  // namespace zinf::cpu
