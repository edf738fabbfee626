// The CUDA backend's entry points in a build made without nvcc: every request for the device
// explains how to get it. Compiled instead of the rest of cuda/ (cmake/cuda.cmake).
#include "cuda/cuda_backend.h"
#include "engine/error.h"

namespace zinf::cuda {

bool CudaBuilt() { return false; }

uint64_t CudaFreeMemoryBytes(int) { return 0; }

std::string CudaUnavailableReason() {
  return "this zinf was built without the CUDA backend (no nvcc found when it was configured)";
}

double MeasurePinnedH2DGbps(int, uint64_t) {
  Fail("--device cuda: {}; install the CUDA Toolkit and rebuild, or run with --device cpu",
       CudaUnavailableReason());
}

void MeasureDeviceRates(int, Bandwidths&) {
  Fail("--device cuda: {}; install the CUDA Toolkit and rebuild, or run with --device cpu",
       CudaUnavailableReason());
}

std::unique_ptr<Backend> CreateCudaBackend(const Checkpoint&, const ModelLimits&,
                                           const CudaOptions&) {
  Fail("--device cuda: {}; install the CUDA Toolkit and rebuild, or run with --device cpu",
       CudaUnavailableReason());
}

}  // namespace zinf::cuda
