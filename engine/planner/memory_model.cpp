// The memory model (engine/planner/memory_model.h): pure host arithmetic, so a build without nvcc
// still says what a GPU run would allocate, and CI checks it against the planner.
#include "engine/planner/memory_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/error.h"

namespace zinf {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// f32 matrices are converted to bf16 through the scratch this many elements at a time.
constexpr uint64_t kConversionChunk = uint64_t{16} << 20;

uint64_t Aligned(uint64_t bytes) {
  return (bytes + kDevicePoolAlignment - 1) / kDevicePoolAlignment * kDevicePoolAlignment;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> ActivationShapes(const ModelConfig& c,
                                                          const ModelLimits& limits) {
  const int64_t rows = limits.max_tokens_per_step;  // the residual stream: the whole step
  const int64_t micro = limits.micro_rows();        // everything else: one micro-batch
  const int64_t sequences = limits.logit_rows();
  std::vector<std::pair<int64_t, int64_t>> shapes = {
      {rows, c.hidden_size},      {micro, c.hidden_size},     {micro, c.q_dim()},
      {micro, c.kv_dim()},        {micro, c.kv_dim()},        {micro, c.q_dim()},
      {micro, c.max_ffn()},       {micro, c.max_ffn()},       {sequences, c.hidden_size},
      {sequences, c.hidden_size}, {sequences, c.embed_dim()}, {sequences, c.vocab_size}};
  if (c.has_embed_projection()) shapes.emplace_back(micro, c.embed_dim());
  if (c.is_moe()) {
    // The experts' input and the router's logits for the whole step (experts run after every
    // micro-batch has been routed), one expert's gathered rows, the shared expert's gate.
    shapes.insert(
        shapes.end(),
        {{rows, c.hidden_size}, {rows, c.moe.num_experts}, {micro, c.hidden_size}, {micro, 1}});
  }
  return shapes;
}

namespace {

uint64_t F32Bytes(const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  uint64_t floats = 0;
  for (const auto& [rows, cols] : shapes) floats += static_cast<uint64_t>(rows) * cols;
  return floats * sizeof(float);
}

}  // namespace

uint64_t ActivationBytes(const ModelConfig& config, const ModelLimits& limits) {
  return F32Bytes(ActivationShapes(config, limits));
}

std::vector<std::pair<int64_t, int64_t>> HostExpertShapes(const ModelConfig& c,
                                                          const ModelLimits& limits) {
  const int64_t micro = limits.micro_rows();
  return {{limits.max_tokens_per_step, c.hidden_size},
          {micro, c.hidden_size},
          {micro, c.moe.expert_ffn},
          {micro, c.moe.expert_ffn},
          {micro, c.hidden_size}};
}

uint64_t HostExpertActivationBytes(const ModelConfig& config, const ModelLimits& limits) {
  return F32Bytes(HostExpertShapes(config, limits));
}

KvCacheShape KvShapeFor(const ModelConfig& c, const ModelLimits& limits) {
  KvCacheShape kv;
  kv.num_layers = c.num_layers;
  kv.num_slots = limits.max_sequences;
  kv.max_context = limits.max_context;
  kv.num_kv_heads = c.num_kv_heads;
  kv.head_dim = c.head_dim;
  kv.dtype = limits.kv_dtype;
  return kv;
}

uint64_t CpuKvCacheBytes(const KvCacheShape& shape) {
  const uint64_t rows =
      static_cast<uint64_t>(shape.num_layers) * shape.num_slots * shape.max_context;
  const uint64_t elements = rows * shape.num_kv_heads * shape.head_dim;
  if (shape.dtype == DType::kI8) return 2 * (elements + rows * shape.num_kv_heads * sizeof(float));
  return 2 * elements * DTypeSize(shape.dtype);
}

GpuCompute ParseGpuCompute(const std::string& text) {
  if (text == "bf16") return GpuCompute::kBf16;
  if (text == "f32") return GpuCompute::kF32;
  Fail("--gpu-compute: '{}' is not one of bf16, f32", text);
}

std::string CudaMemory::Summary() const {
  return fmt::format("device memory {:.2f} GiB: weights {:.2f} + KV cache {:.2f} + activations "
                     "{:.2f} + scratch {:.2f}",
                     total() / kGiB, weight_bytes() / kGiB, kv_bytes / kGiB,
                     activation_bytes / kGiB, scratch_bytes / kGiB);
}

CudaMemory CudaMemoryFor(const Checkpoint& checkpoint, const ModelLimits& limits,
                         const Placement& placement, GpuCompute compute, bool kv_offload) {
  const ModelConfig& c = checkpoint.config;
  ZINF_CHECK(placement.size() == checkpoint.extents.size(), "{} placements for {} extents",
             placement.size(), checkpoint.extents.size());
  CudaMemory memory;
  // Weights: device-held extents (f32 matrices converted in place under bf16 compute), plus a
  // ring of slots each as large as the largest extent copied every step.
  const uint64_t dequantized_bytes = compute == GpuCompute::kF32 ? 4 : 2;
  for (size_t e = 0; e < checkpoint.extents.size(); ++e) {
    const ExtentInfo& extent = checkpoint.extents[e];
    // Experts the CPU computes never reach the device.
    if (placement.ComputedOnHost(e, extent.kind == ExtentKind::kExpert)) continue;
    if (placement[e] == Tier::kDevice) {
      memory.resident_weight_bytes += Aligned(extent.padded_bytes);
    } else {
      memory.slot_bytes = std::max(memory.slot_bytes, Aligned(extent.padded_bytes));
    }
    for (const TensorInfo& tensor : extent.tensors) {
      const uint64_t elements = static_cast<uint64_t>(tensor.rows()) * tensor.cols();
      if (IsQuantized(tensor.dtype)) {  // dequantised whole before each product
        memory.matrix_scratch_bytes =
            std::max(memory.matrix_scratch_bytes, elements * dequantized_bytes);
      } else if (tensor.dtype == DType::kF32 && tensor.shape.size() == 2 &&
                 compute == GpuCompute::kBf16) {  // converted at upload, a chunk at a time
        memory.matrix_scratch_bytes = std::max(memory.matrix_scratch_bytes,
                                               std::min<uint64_t>(elements, kConversionChunk) * 4);
      }
    }
  }
  if (memory.slot_bytes > 0) memory.slots = std::max(placement.device_slots, 2);
  const KvCacheShape kv = KvShapeFor(c, limits);
  const uint64_t kv_elements = static_cast<uint64_t>(kv.num_layers) * kv.num_slots *
                               kv.max_context * kv.num_kv_heads * kv.head_dim;
  if (kv_offload) {
    memory.kv_bytes = 0;  // in DRAM, in the CPU backend's layout (CpuKvCacheBytes)
  } else if (kv.dtype == DType::kI8) {
    const uint64_t scales =
        static_cast<uint64_t>(kv.num_layers) * kv.num_slots * kv.max_context * kv.num_kv_heads;
    memory.kv_bytes = 2 * (Aligned(kv_elements) + Aligned(scales * 4));
  } else {  // an "f32" cache is held in the compute type: bf16 under bf16 compute
    memory.kv_bytes = 2 * Aligned(kv_elements * (compute == GpuCompute::kF32 ? 4 : 2));
  }
  // 16 activations at most, each aligned.
  memory.activation_bytes = Aligned(ActivationBytes(c, limits)) + 16 * kDevicePoolAlignment;
  // Scratch: the GEMM input cast (the widest input row over the step's rows), one matrix in f32
  // (dequantised or awaiting conversion), the per-step row maps, the RoPE tables, cuBLAS's
  // workspace.
  const int64_t widest_input = std::max({c.hidden_size, c.q_dim(), c.max_ffn(), c.embed_dim()});
  const int64_t input_rows = std::max<int64_t>(limits.max_tokens_per_step, limits.logit_rows());
  memory.gemm_input_bytes = static_cast<uint64_t>(input_rows) * widest_input * 4;
  // MoE adds an expert's gathered rows, scattered rows and routing weights, a micro-batch at
  // a time, each in its own allocation.
  const uint64_t moe_row_maps =
      c.is_moe() ? 3 * static_cast<uint64_t>(limits.micro_rows()) * 4 * kDeviceIntsEntries +
                       2 * kDevicePoolAlignment
                 : 0;
  const uint64_t row_maps =
      static_cast<uint64_t>(limits.max_tokens_per_step + limits.logit_rows()) * 4 * 4 *
          kDeviceIntsEntries +
      moe_row_maps;
  const uint64_t rope_table = static_cast<uint64_t>(limits.max_context) * (c.head_dim / 2) * 4;
  memory.scratch_bytes = Aligned(memory.gemm_input_bytes) + Aligned(memory.matrix_scratch_bytes) +
                         Aligned(row_maps) + 2 * Aligned(rope_table) + kCublasWorkspaceBytes +
                         8 * kDevicePoolAlignment;
  return memory;
}

}  // namespace zinf
