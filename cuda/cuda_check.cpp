// CheckCuda / CheckCublas: status codes to zinf::Error with messages a user can act on.
#include "cuda/cuda_check.h"

#include "engine/error.h"

namespace zinf::cuda {

void CheckCuda(cudaError_t status, std::string_view what) {
  if (status == cudaSuccess) return;
  std::string hint;
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: hint = "; no usable GPU — run with --device cpu"; break;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      hint = "; this build has no code for this GPU's architecture (built for sm_80 and sm_90) — "
             "rebuild with -DCMAKE_CUDA_ARCHITECTURES=<yours> or run with --device cpu";
      break;
    case cudaErrorMemoryAllocation:
      hint =
          "; the GPU is out of memory — lower --batch-size or --max-context, or use --device cpu";
      break;
    default: break;
  }
  cudaGetLastError();  // clear a sticky-free error so a later check reports its own failure
  Fail("CUDA error during {}: {} ({}){}", what, cudaGetErrorName(status),
       cudaGetErrorString(status), hint);
}

void CheckCublas(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  Fail("cuBLAS error during {}: {} ({})", what, cublasGetStatusName(status),
       cublasGetStatusString(status));
}

}  // namespace zinf::cuda
