// The int8-weight matrix product at the kAvx512 level (AVX-512 BW/VL/DQ + VNNI): bit-identical
// to the portable kernel in cpu/matmul_quant.cpp, only faster. Call it only when BestCpuIsa() is
// kAvx512 or above (the kAmx kernel hands it the rows and token counts its tiles leave).
#pragma once

#include <cstdint>

#include "cpu/q8_activations.h"
#include "engine/backend.h"

namespace zinf::cpu {

// The rows of a lone token's tiles, a stride apart: the streams its weights are read as. 8 read
// DRAM faster than 16 (Emerald Rapids guest, one thread: 5632 × 2048 15.1 vs 13.6 GB/s, 2048 ×
// 5632 15.3 vs 14.9; 1.1B-shape decode, 2 threads, alternating: 25.7-26.7 → 27.5-28.6 tok/s) and
// as fast from L2.
constexpr int kI8Avx512DecodeRows = 8;

// w.dtype is kI8; xq holds the num_tokens tokens quantized (QuantizeActivationsQ8); the rest
// are MatMulRowsQuantized's.
void MatMulI8Avx512(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                    const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                    int64_t row_end);

}  // namespace zinf::cpu
