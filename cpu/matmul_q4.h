// int4 weights multiplied as integers: the activations quantized to int8 in blocks of the weights'
// group (cpu/q4_activations.h), per group the exact int32 sums of nibble × int8 products in 8
// lanes of 4, then per lane fma(float(sum), scale × activation scale, lane); the lanes reduced in
// ReduceLanes' order, plus Σ over groups fma(minimum, minimum factor, ·), plus the bias. Every
// level (portable, AVX2, AVX-512 VNNI) gives these bits; see MatMulRows for the arguments.
#pragma once

#include <cstdint>

#include "cpu/isa.h"
#include "engine/backend.h"

namespace zinf::cpu {

struct SharedActivations;

// w.dtype is kQ4.
void MatMulQ4(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
              const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
              int64_t row_end, CpuIsa isa, uint64_t x_version = 0,
              const SharedActivations* shared = nullptr);

}  // namespace zinf::cpu
