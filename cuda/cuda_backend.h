// The CUDA backend's public face: options and a factory. Names no CUDA type, so cmd/ and the tests
// include it without nvcc; in a build without nvcc the factory throws an error saying so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/model.h"
#include "engine/planner/memory_model.h"
#include "engine/planner/placement.h"
#include "engine/planner/planner.h"

namespace zinf::cuda {

// What f32 weights are multiplied in (engine/planner/memory_model.h).
using ComputeType = GpuCompute;

struct CudaOptions {
  int device = 0;
  ComputeType compute = ComputeType::kBf16;
  uint64_t gpu_mem_bytes = 0;     // budget for the run's memory pool; 0: what the device has free
  uint64_t extra_pool_bytes = 0;  // tests: room for activations beyond the model's
  // The planner's placement: kDevice extents loaded once at start (Backend::LoadResident), the
  // rest copied into placement.device_slots slots every step. No tiers: all on the device.
  Placement placement;
  // --kv-offload cpu: the KV cache in DRAM and attention on the CPU (cuda/host_kv_attention.h)
  // with `host_threads` threads; device memory then holds no KV cache.
  bool kv_offload = false;
  int host_threads = 1;
};

// True when this binary was built with the CUDA backend.
bool CudaBuilt();

// Free memory on `device` in bytes; 0 when there is no usable device.
uint64_t CudaFreeMemoryBytes(int device);

// "" when a usable device is present, else why not (no driver, no device, ...).
std::string CudaUnavailableReason();

// Host-to-device copy rate of `device` from page-locked host memory, in GB/s: the best of several
// cudaMemcpy calls of `bytes` each (after one warm-up). What a streamed run's copies are measured
// against. Throws zinf::Error without a usable device.
double MeasurePinnedH2DGbps(int device, uint64_t bytes);

// What `zinf calibrate` measures of a GPU, into the GPU fields of `rates` (engine/planner/planner.h
// says how the planner uses each): pinned host-to-device copies, device-memory bandwidth (reads
// plus writes of a device-to-device copy), the bf16 cuBLAS GEMM rate, what a decode step's kernels
// cost beyond bytes and arithmetic, and the logits' copy to pageable host memory. Throws
// zinf::Error without a usable device.
void MeasureDeviceRates(int device, Bandwidths& rates);

// Opens the device, allocates the pool and creates the cuBLAS handle. Throws zinf::Error when no
// usable device is present (suggesting --device cpu) or the pool does not fit.
std::unique_ptr<Backend> CreateCudaBackend(const Checkpoint& checkpoint, const ModelLimits& limits,
                                           const CudaOptions& options);

}  // namespace zinf::cuda
