// The int8-weight matrix product at the kAmx level: the block sums of 16 rows × 16 tokens from one
// AMX tile product, the rest as at kAvx512, so bit-identical to the portable kernel
// (cpu/matmul_quant.cpp). Call it only when BestCpuIsa() is kAmx.
#pragma once

#include <cstdint>

#include "cpu/q8_activations.h"
#include "engine/backend.h"

namespace zinf::cpu {

// w.dtype is kI8; xq holds the num_tokens tokens quantized (QuantizeActivationsQ8); the rest
// are MatMulRowsQuantized's. A few tokens, and the rows left over from 16-row tiles, run the
// AVX-512 kernel.
void MatMulI8Amx(const Q8Activations& xq, int64_t num_tokens, const Weight& w, const Weight& bias,
                 float* out, int64_t out_stride, int64_t row_begin, int64_t row_end);

}  // namespace zinf::cpu
