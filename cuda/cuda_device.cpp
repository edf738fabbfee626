// The factory and the device probe of a build with the CUDA backend.
#include <cuda_runtime_api.h>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_backend_impl.h"
#include "engine/error.h"

namespace zinf::cuda {

bool CudaBuilt() { return true; }

uint64_t CudaFreeMemoryBytes(int device) {
  if (!CudaUnavailableReason().empty() || cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

std::string CudaUnavailableReason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return fmt::format("no usable CUDA device ({}: {})", cudaGetErrorName(status),
                       cudaGetErrorString(status));
  }
  if (count == 0) return "no CUDA device on this machine";
  return "";
}

std::unique_ptr<Backend> CreateCudaBackend(const Checkpoint& checkpoint, const ModelLimits& limits,
                                           const CudaOptions& options) {
  if (const std::string reason = CudaUnavailableReason(); !reason.empty()) {
    Fail("--device cuda: {}; run with --device cpu", reason);
  }
  return std::make_unique<CudaBackend>(checkpoint, limits, options);
}

}  // namespace zinf::cuda
