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

namespace zinf::cuda {

// What f32 weights are multiplied in. f16 and bf16 checkpoints compute in their own type and
// int8/int4 ones in bf16 (or f32 with kF32); every product accumulates in f32.
enum class ComputeType : uint8_t { kBf16, kF32 };

// "bf16" or "f32"; throws zinf::Error naming the flag otherwise.
ComputeType ParseComputeType(const std::string& text);

struct CudaOptions {
  int device = 0;
  ComputeType compute = ComputeType::kBf16;
  uint64_t gpu_mem_bytes = 0;  // budget for the run's memory pool; 0: what the device has free
  uint64_t extra_pool_bytes = 0;  // tests: room for activations beyond the model's
  // Per extent (checkpoint order): kept in device memory after its first bind (true), or copied
  // into a ring of `streaming_slots` device slots every step (false). Empty: all resident.
  std::vector<bool> device_resident;
  int streaming_slots = 2;
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

// Device memory the backend takes for a run: weights (resident), KV cache, activations and
// scratch, in one allocation made at construction.
// Entries of each small device int array (positions, row maps, token ids) the backend keeps, so
// that micro-batches taking turns within a layer find theirs already on the device.
inline constexpr int kDeviceIntsEntries = 4;

struct CudaMemoryPlan {
  uint64_t weight_bytes = 0;  // resident extents, plus the streaming slots
  uint64_t slot_bytes = 0;    // one streaming slot: the largest streamed extent (0: none)
  uint64_t kv_bytes = 0;
  uint64_t activation_bytes = 0;
  uint64_t scratch_bytes = 0;  // GEMM input casts, dequantised matrices, cuBLAS workspace
  // Parts of scratch_bytes the backend allocates by these sizes:
  uint64_t gemm_input_bytes = 0;     // a step's widest GEMM input, cast to f16/bf16
  // The largest matrix dequantised (in the compute type), or one chunk of an f32 matrix on its
  // way to bf16 at upload.
  uint64_t matrix_scratch_bytes = 0;
  uint64_t total() const { return weight_bytes + kv_bytes + activation_bytes + scratch_bytes; }
  std::string Summary() const;
};

CudaMemoryPlan PlanCudaMemory(const Checkpoint& checkpoint, const ModelLimits& limits,
                              const CudaOptions& options);

// Opens the device, allocates the pool and creates the cuBLAS handle. Throws zinf::Error when no
// usable device is present (suggesting --device cpu) or the pool does not fit.
std::unique_ptr<Backend> CreateCudaBackend(const Checkpoint& checkpoint, const ModelLimits& limits,
                                           const CudaOptions& options);

}  // namespace zinf::cuda
