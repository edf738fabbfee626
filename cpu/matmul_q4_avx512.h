// The int4-weight matrix product at the kAvx512 level (AVX-512 BW/VL/DQ + VNNI): the bits of the
// portable kernel in cpu/matmul_q4.cpp, with the nibble × int8 sums from vpdpbusd. Call it only
// when BestCpuIsa() is kAvx512.
#pragma once

#include <cstdint>

#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "engine/backend.h"

namespace zinf::cpu {

void MatMulQ4Avx512(const Q4Activations& xa, const QuantRows& w, const Weight& bias, float* out,
                    int64_t out_stride, int64_t row_begin, int64_t row_end);

}  // namespace zinf::cpu
