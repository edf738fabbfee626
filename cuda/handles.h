// Owners for CUDA and cuBLAS handles and memory: unique_ptr with a deleter that hands the pointer
// to the call that releases it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>

namespace zinf::cuda {

template <auto kRelease>
struct ReleaseWith {
  template <typename Handle>
  void operator()(Handle handle) const {
    kRelease(handle);
  }
};

using DeviceBuffer = std::unique_ptr<void, ReleaseWith<cudaFree>>;
template <typename T>
using PinnedBuffer = std::unique_ptr<T, ReleaseWith<cudaFreeHost>>;
using Event = std::unique_ptr<CUevent_st, ReleaseWith<cudaEventDestroy>>;
using Stream = std::unique_ptr<CUstream_st, ReleaseWith<cudaStreamDestroy>>;
using CublasHandle = std::unique_ptr<cublasContext, ReleaseWith<cublasDestroy>>;

}  // namespace zinf::cuda
