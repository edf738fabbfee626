// The AVX-512 float matmul kernel for several tokens (prefill, batches): same arithmetic as the
// AVX2 and portable kernels, so the same bits, at twice the width.
#pragma once

#include <cstdint>

#include "engine/backend.h"

namespace zinf::cpu {

// MatMulRows for f32/f16/bf16 weights and num_tokens ≥ 2, on a CPU with AVX-512 F/BW/VL/DQ.
void MatMulRowsAvx512(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                      int64_t row_end, uint64_t x_version);

}  // namespace zinf::cpu
