// The projections' matrix products through cuBLAS: f32 output from f32, f16 or bf16 operands,
// always accumulated in f32 (CUBLAS_COMPUTE_32F; no TF32, so f32 compute stays f32).
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "cuda/kernels.h"

namespace zinf::cuda {

// out[n, m] = x[n, k] · w[m, k]ᵀ, all row-major, x and w stored in `type`, out f32.
void Gemm(cublasHandle_t handle, const void* x, const void* w, kernels::GemmType type, int64_t n,
          int64_t k, int64_t m, float* out);

}  // namespace zinf::cuda
