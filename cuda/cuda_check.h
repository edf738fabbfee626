// Every CUDA runtime and cuBLAS call of the backend goes through these: a failure becomes a
// zinf::Error naming the call, the error and, for out-of-memory, what the caller was doing.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string_view>

namespace zinf::cuda {

// Throws zinf::Error "CUDA error during <what>: <name> (<description>)" unless status is success.
void CheckCuda(cudaError_t status, std::string_view what);
void CheckCublas(cublasStatus_t status, std::string_view what);

}  // namespace zinf::cuda
