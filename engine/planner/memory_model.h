// The one description of what a run allocates: activations per micro-batch, the KV cache in the
// layout of whichever backend holds it, and the CUDA backend's single device pool item by item
// (weights, slots, KV cache, activations, scratch). The planner, Model and both backends size
// their memory with these functions, so a plan's byte counts are the bytes a run asks for.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/model.h"
#include "engine/planner/placement.h"

namespace zinf {

// Every activation Model allocates, as (rows, cols) f32, in the order its constructor takes them:
// the residual stream holds the whole step; the per-layer buffers one micro-batch; the head's
// buffers one row per logit row.
std::vector<std::pair<int64_t, int64_t>> ActivationShapes(const ModelConfig& config,
                                                          const ModelLimits& limits);
uint64_t ActivationBytes(const ModelConfig& config, const ModelLimits& limits);
// The host buffers of Placement::host_computes_experts, in the order Model takes them: the step's
// FFN inputs, and one micro-batch of an expert's gathered rows, gate and up products and output.
std::vector<std::pair<int64_t, int64_t>> HostExpertShapes(const ModelConfig& config,
                                                          const ModelLimits& limits);
uint64_t HostExpertActivationBytes(const ModelConfig& config, const ModelLimits& limits);

// The KV cache Model asks its backend for.
KvCacheShape KvShapeFor(const ModelConfig& config, const ModelLimits& limits);

// The CPU backend's KV cache (cpu/kv_cache.cpp), which also holds a CUDA run's offloaded cache:
// keys and values as f32, f16, or int8 with an f32 scale per (position, KV head).
uint64_t CpuKvCacheBytes(const KvCacheShape& shape);

// What f32 weights are multiplied in on the GPU. f16 and bf16 checkpoints compute in their own
// type and int8/int4 ones in bf16 (or f32 with kF32); every product accumulates in f32.
enum class GpuCompute : uint8_t { kBf16, kF32 };
// "bf16" or "f32"; throws zinf::Error naming --gpu-compute otherwise.
GpuCompute ParseGpuCompute(const std::string& text);

// Entries of each small device int array (positions, row maps, token ids) the CUDA backend keeps,
// so that micro-batches taking turns within a layer find theirs already on the device.
inline constexpr int kDeviceIntsEntries = 4;
// Sub-allocations of the CUDA pool are aligned to this, and each may waste up to it.
inline constexpr uint64_t kDevicePoolAlignment = 256;
// cuBLAS's recommended workspace on Hopper, carved from the pool.
inline constexpr uint64_t kCublasWorkspaceBytes = 32ull << 20;

// The CUDA backend's one device allocation, item by item.
struct CudaMemory {
  uint64_t resident_weight_bytes = 0;  // extents held on the device for the whole run
  uint64_t slot_bytes = 0;  // one streaming slot: the largest extent copied every step (0: none)
  int slots = 0;            // streaming slots (0 when nothing streams)
  uint64_t kv_bytes = 0;    // 0 when the KV cache is offloaded to DRAM
  uint64_t activation_bytes = 0;
  uint64_t scratch_bytes = 0;  // GEMM input casts, dequantised matrices, cuBLAS workspace, tables
  // Parts of scratch_bytes the backend allocates by these sizes:
  uint64_t gemm_input_bytes = 0;  // a step's widest GEMM input, cast to f16/bf16
  // The largest matrix dequantised (in the compute type), or one chunk of an f32 matrix on its
  // way to bf16 at upload.
  uint64_t matrix_scratch_bytes = 0;

  uint64_t weight_bytes() const { return resident_weight_bytes + slot_bytes * slots; }
  uint64_t total() const { return weight_bytes() + kv_bytes + activation_bytes + scratch_bytes; }
  std::string Summary() const;
};

// The device pool of a CUDA run: `placement`'s kDevice extents resident, a ring of
// placement.device_slots slots (at least 2) for the rest, the KV cache unless offloaded.
CudaMemory CudaMemoryFor(const Checkpoint& checkpoint, const ModelLimits& limits,
                         const Placement& placement, GpuCompute compute, bool kv_offload);

}  // namespace zinf
