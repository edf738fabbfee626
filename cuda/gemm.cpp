// Gemm: row-major x·wᵀ expressed as cuBLAS's column-major (wᵀ)ᵀ·xᵀ, with no transposes in memory.
#include "cuda/gemm.h"

#include <limits>

#include "cuda/cuda_check.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace {

cudaDataType_t CudaType(kernels::GemmType type) {
  switch (type) {
    case kernels::GemmType::kF32: return CUDA_R_32F;
    case kernels::GemmType::kF16: return CUDA_R_16F;
    case kernels::GemmType::kBF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

}  // namespace

void Gemm(cublasHandle_t handle, const void* x, const void* w, kernels::GemmType type, int64_t n,
          int64_t k, int64_t m, float* out) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  ZINF_CHECK(n <= kMax && k <= kMax && m <= kMax, "GEMM dimensions {}x{}x{} exceed cuBLAS's int", n,
             k, m);
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t operand = CudaType(type);
  // Column-major: w's bytes are a k×m matrix (wᵀ), x's a k×n one (xᵀ); C = (wᵀ)ᵀ·xᵀ is m×n
  // column-major, which is out[n, m] row-major.
  CheckCublas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m),
                           static_cast<int>(n), static_cast<int>(k), &alpha, w, operand,
                           static_cast<int>(k), x, operand, static_cast<int>(k), &beta, out,
                           CUDA_R_32F, static_cast<int>(m), CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              "matrix product (cublasGemmEx)");
}

}  // namespace zinf::cuda
