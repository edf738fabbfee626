// Matrix products of f32 activations with int8 and int4 weights (no layer is ever expanded to
// floats): both as integer dot products with the activations quantized to int8, int8 in blocks
// of 32, int4 in blocks of its group (cpu/matmul_q4.h). Same contract as cpu::MatMulRows: an output
// element's value depends only on its row and token, never on the batch, tiling or thread count.
#pragma once

#include <cstdint>

#include "cpu/isa.h"
#include "engine/backend.h"

namespace zinf::cpu {

struct SharedActivations;

// w.dtype is kI8 or kQ4; see MatMulRows for the arguments.
void MatMulRowsQuantized(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                         const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                         int64_t row_end, CpuIsa isa, uint64_t x_version = 0,
                         const SharedActivations* shared = nullptr);

}  // namespace zinf::cpu
