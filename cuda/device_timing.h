// Timing work on the GPU for `zinf calibrate`: allocations that free themselves, and the fastest
// of several event-timed runs of a piece of enqueued work.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/handles.h"

namespace zinf::cuda {

inline DeviceBuffer AllocateDevice(uint64_t bytes, const char* what) {
  void* p = nullptr;
  CheckCuda(cudaMalloc(&p, bytes), what);
  return DeviceBuffer(p);
}

inline Event MakeEvent() {
  cudaEvent_t event = nullptr;
  CheckCuda(cudaEventCreate(&event), "creating an event to time the GPU");
  return Event(event);
}

inline CublasHandle MakeCublas() {
  cublasHandle_t raw = nullptr;
  CheckCublas(cublasCreate(&raw), "creating a cuBLAS handle");
  return CublasHandle(raw);
}

// The fastest of `runs` timed calls of `work` (after one warm-up), in seconds: the time between
// events recorded on the default stream around it, so host-side enqueueing that starves the GPU
// counts too.
template <typename Work>
double FastestSeconds(int runs, Work work) {
  const Event start = MakeEvent(), stop = MakeEvent();
  double best = 0;
  for (int i = 0; i <= runs; ++i) {
    CheckCuda(cudaEventRecord(start.get(), nullptr), "timing the GPU");
    work();
    CheckCuda(cudaEventRecord(stop.get(), nullptr), "timing the GPU");
    CheckCuda(cudaEventSynchronize(stop.get()), "timing the GPU");
    float milliseconds = 0;
    CheckCuda(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "timing the GPU");
    const double seconds = milliseconds / 1e3;
    if (i > 0 && seconds > 0 && (best == 0 || seconds < best)) best = seconds;
  }
  return best;
}

// What one decode step's kernels cost beyond moving bytes and multiplying, measured with the
// backend's own launches (cuda/kernel_costs.cpp): fills the gpu_* fields of `rates` so named.
void MeasureKernelCosts(int device, Bandwidths& rates);

}  // namespace zinf::cuda
