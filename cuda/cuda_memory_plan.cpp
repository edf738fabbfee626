// PlanCudaMemory: the one device allocation a CUDA run makes, item by item. Portable C++ (no CUDA
// headers), so a build without nvcc can still say what a GPU run would need.
#include <algorithm>

#include "cuda/cuda_backend.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Sub-allocations are aligned to this, and each may waste up to it.
constexpr uint64_t kPoolAlignment = 256;
// cuBLAS's recommended workspace on Hopper.
constexpr uint64_t kCublasWorkspaceBytes = 32ull << 20;

// f32 matrices are converted to bf16 through the scratch this many elements at a time.
constexpr uint64_t kConversionChunk = uint64_t{16} << 20;

uint64_t Aligned(uint64_t bytes) { return (bytes + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment; }

}  // namespace

ComputeType ParseComputeType(const std::string& text) {
  if (text == "bf16") return ComputeType::kBf16;
  if (text == "f32") return ComputeType::kF32;
  Fail("--gpu-compute: '{}' is not one of bf16, f32", text);
}

std::string CudaMemoryPlan::Summary() const {
  return fmt::format("device memory {:.2f} GiB: weights {:.2f} + KV cache {:.2f} + activations "
                     "{:.2f} + scratch {:.2f}",
                     total() / kGiB, weight_bytes / kGiB, kv_bytes / kGiB, activation_bytes / kGiB,
                     scratch_bytes / kGiB);
}

CudaMemoryPlan PlanCudaMemory(const Checkpoint& checkpoint, const ModelLimits& limits,
                              const CudaOptions& options) {
  const ModelConfig& c = checkpoint.config;
  const ComputeType compute = options.compute;
  ZINF_CHECK(options.device_resident.empty() ||
                 options.device_resident.size() == checkpoint.extents.size(),
             "{} residency flags for {} extents", options.device_resident.size(),
             checkpoint.extents.size());
  CudaMemoryPlan plan;
  // Weights: resident extents (f32 matrices converted in place under bf16 compute), plus a ring
  // of slots each as large as the largest streamed extent.
  const uint64_t dequantized_bytes = compute == ComputeType::kF32 ? 4 : 2;
  for (size_t e = 0; e < checkpoint.extents.size(); ++e) {
    const ExtentInfo& extent = checkpoint.extents[e];
    if (options.device_resident.empty() || options.device_resident[e]) {
      plan.weight_bytes += Aligned(extent.padded_bytes);
    } else {
      plan.slot_bytes = std::max(plan.slot_bytes, Aligned(extent.padded_bytes));
    }
    for (const TensorInfo& tensor : extent.tensors) {
      const uint64_t elements = static_cast<uint64_t>(tensor.rows()) * tensor.cols();
      if (IsQuantized(tensor.dtype)) {  // dequantised whole before each product
        plan.matrix_scratch_bytes = std::max(plan.matrix_scratch_bytes, elements * dequantized_bytes);
      } else if (tensor.dtype == DType::kF32 && tensor.shape.size() == 2 &&
                 compute == ComputeType::kBf16) {  // converted at upload, a chunk at a time
        plan.matrix_scratch_bytes =
            std::max(plan.matrix_scratch_bytes, std::min<uint64_t>(elements, kConversionChunk) * 4);
      }
    }
  }
  if (plan.slot_bytes > 0) plan.weight_bytes += plan.slot_bytes * std::max(options.streaming_slots, 2);
  const KvCacheShape kv = Model::KvShape(c, limits);
  const uint64_t kv_elements = static_cast<uint64_t>(kv.num_layers) * kv.num_slots *
                               kv.max_context * kv.num_kv_heads * kv.head_dim;
  if (options.kv_offload) {
    plan.kv_bytes = 0;  // in DRAM (cuda/host_kv_attention.h)
  } else if (kv.dtype == DType::kI8) {
    const uint64_t scales = static_cast<uint64_t>(kv.num_layers) * kv.num_slots * kv.max_context *
                            kv.num_kv_heads;
    plan.kv_bytes = 2 * (Aligned(kv_elements) + Aligned(scales * 4));
  } else {  // an "f32" cache is held in the compute type: bf16 under bf16 compute
    plan.kv_bytes = 2 * Aligned(kv_elements * (compute == ComputeType::kF32 ? 4 : 2));
  }
  // 16 activations at most, each aligned.
  plan.activation_bytes = Aligned(static_cast<uint64_t>(Model::ActivationFloats(c, limits)) * 4) +
                          16 * kPoolAlignment;
  // Scratch: the GEMM input cast (the widest input row over the step's rows), one matrix in f32
  // (dequantised or awaiting conversion), the per-step row maps, the RoPE tables, cuBLAS's
  // workspace.
  const int64_t widest_input = std::max({c.hidden_size, c.q_dim(), c.intermediate_size, c.embed_dim()});
  const int64_t input_rows = std::max<int64_t>(limits.max_tokens_per_step, limits.logit_rows());
  plan.gemm_input_bytes = static_cast<uint64_t>(input_rows) * widest_input * 4;
  const uint64_t row_maps = static_cast<uint64_t>(limits.max_tokens_per_step + limits.logit_rows()) *
                            4 * 4 * kDeviceIntsEntries;
  const uint64_t rope_table = static_cast<uint64_t>(limits.max_context) * (c.head_dim / 2) * 4;
  plan.scratch_bytes = Aligned(plan.gemm_input_bytes) + Aligned(plan.matrix_scratch_bytes) + Aligned(row_maps) +
                       2 * Aligned(rope_table) + kCublasWorkspaceBytes + 8 * kPoolAlignment;
  return plan;
}

}  // namespace zinf::cuda
