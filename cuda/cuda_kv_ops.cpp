// CudaBackend's KV cache and attention: the cache's memory and per-layer views, each step's row
// map (slot and position per row), and StoreKv / Attention on the device or, with --kv-offload
// cpu, on the host's CPU.
#include <algorithm>

#include "cuda/cuda_backend_impl.h"
#include "cuda/cuda_check.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace kn = kernels;

namespace {

// Every chunk names a slot of the cache and fits its context; checked on the host thread before
// anything is queued, offloaded or not, so a bad batch fails at once and the same way.
void CheckChunks(const KvCacheShape& shape, std::span<const SequenceChunk> chunks) {
  for (const SequenceChunk& chunk : chunks) {
    ZINF_CHECK(chunk.kv_slot >= 0 && chunk.kv_slot < shape.num_slots, "KV slot {} of {}",
               chunk.kv_slot, shape.num_slots);
    ZINF_CHECK(chunk.start_position >= 0 &&
                   chunk.start_position + chunk.num_tokens <= shape.max_context,
               "sequence of {} positions exceeds the KV cache ({})",
               chunk.start_position + chunk.num_tokens, shape.max_context);
  }
}

}  // namespace

kn::RowMap CudaBackend::UploadRowMap(std::span<const SequenceChunk> chunks) {
  // StoreKv and Attention of every layer pass the same chunks: build and check them once.
  auto same_chunk = [](const SequenceChunk& a, const SequenceChunk& b) {
    return a.kv_slot == b.kv_slot && a.start_position == b.start_position &&
           a.num_tokens == b.num_tokens && a.token_offset == b.token_offset;
  };
  if (std::equal(chunks.begin(), chunks.end(), mapped_chunks_.begin(), mapped_chunks_.end(),
                 same_chunk)) {
    return row_map_;
  }
  int rows = 0;
  for (const SequenceChunk& chunk : chunks)
    rows = std::max(rows, chunk.token_offset + chunk.num_tokens);
  CheckChunks(kv_shape_, chunks);
  std::vector<int> slots(rows, -1), positions(rows, 0);  // rows of no chunk stay untouched
  for (const SequenceChunk& chunk : chunks) {
    for (int i = 0; i < chunk.num_tokens; ++i) {
      slots[chunk.token_offset + i] = chunk.kv_slot;
      positions[chunk.token_offset + i] = chunk.start_position + i;
    }
  }
  row_map_.slot = Upload(row_slots_, slots, "row slots");
  row_map_.position = Upload(row_positions_, positions, "row positions");
  row_map_.rows = rows;
  mapped_chunks_.assign(chunks.begin(), chunks.end());
  return row_map_;
}

void CudaBackend::AllocateKvCache(const KvCacheShape& shape) {
  if (shape.dtype != DType::kF32 && shape.dtype != DType::kI8) {
    Fail("KV cache dtype {} is not supported on CUDA; use f32 or int8", DTypeName(shape.dtype));
  }
  kv_shape_ = shape;
  if (host_kv_) return;  // in DRAM, allocated with the backend
  // An f32 cache is held in the compute type (bf16 halves it, as the planner assumes).
  kv_type_ = shape.dtype == DType::kI8        ? kn::KvType::kI8
             : compute_ == ComputeType::kBf16 ? kn::KvType::kBF16
                                              : kn::KvType::kF32;
  const uint64_t rows =
      static_cast<uint64_t>(shape.num_layers) * shape.num_slots * shape.max_context;
  const uint64_t elements = rows * shape.num_kv_heads * shape.head_dim;
  const uint64_t element_bytes = KvElementBytes();
  keys_ = pool_->Allocate(elements * element_bytes, "the KV cache's keys");
  values_ = pool_->Allocate(elements * element_bytes, "the KV cache's values");
  if (shape.dtype == DType::kI8) {
    key_scales_ = static_cast<float*>(pool_->Allocate(rows * shape.num_kv_heads * 4, "key scales"));
    value_scales_ =
        static_cast<float*>(pool_->Allocate(rows * shape.num_kv_heads * 4, "value scales"));
  }
}

uint64_t CudaBackend::KvElementBytes() const {
  switch (kv_type_) {
    case kn::KvType::kF32: return 4;
    case kn::KvType::kBF16: return 2;
    case kn::KvType::kI8: return 1;
  }
  return 4;
}

kn::KvLayer CudaBackend::KvLayerView(int layer) const {
  ZINF_CHECK(layer >= 0 && layer < kv_shape_.num_layers, "layer {} of {}", layer,
             kv_shape_.num_layers);
  const int64_t layer_rows = static_cast<int64_t>(kv_shape_.num_slots) * kv_shape_.max_context;
  const int64_t layer_elements = layer_rows * kv_shape_.num_kv_heads * kv_shape_.head_dim;
  kn::KvLayer view;
  view.type = kv_type_;
  const int64_t element_bytes = static_cast<int64_t>(KvElementBytes());
  view.keys = static_cast<std::byte*>(keys_) + layer * layer_elements * element_bytes;
  view.values = static_cast<std::byte*>(values_) + layer * layer_elements * element_bytes;
  if (view.type == kn::KvType::kI8) {
    view.key_scales = key_scales_ + layer * layer_rows * kv_shape_.num_kv_heads;
    view.value_scales = value_scales_ + layer * layer_rows * kv_shape_.num_kv_heads;
  }
  view.max_context = kv_shape_.max_context;
  view.num_kv_heads = kv_shape_.num_kv_heads;
  view.head_dim = kv_shape_.head_dim;
  return view;
}

void CudaBackend::StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v) {
  const int64_t kv_dim = static_cast<int64_t>(kv_shape_.num_kv_heads) * kv_shape_.head_dim;
  ZINF_CHECK(k.cols == kv_dim && v.cols == kv_dim, "KV width {} / {} vs {}", k.cols, v.cols,
             kv_dim);
  if (host_kv_) {
    CheckChunks(kv_shape_, chunks);
    return host_kv_->StoreKv(layer, chunks, k, v, stream_);
  }
  const kn::RowMap map = UploadRowMap(chunks);
  CheckCuda(kn::StoreKv(KvLayerView(layer), map, Floats(k), Floats(v), stream_),
            "storing the KV cache");
}

void CudaBackend::Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                            const AttentionShape& shape, Tensor out) {
  ZINF_CHECK(shape.head_dim == kv_shape_.head_dim && shape.num_kv_heads == kv_shape_.num_kv_heads &&
                 shape.num_heads % shape.num_kv_heads == 0,
             "attention shape {} heads / {} KV heads / head_dim {} vs the cache's {} / {}",
             shape.num_heads, shape.num_kv_heads, shape.head_dim, kv_shape_.num_kv_heads,
             kv_shape_.head_dim);
  if (shape.head_dim > kn::kMaxHeadDim) {
    Fail("head_dim {} is larger than the CUDA attention kernel's {}; use --device cpu",
         shape.head_dim, kn::kMaxHeadDim);
  }
  ZINF_CHECK(q.cols == static_cast<int64_t>(shape.num_heads) * shape.head_dim && out.cols == q.cols,
             "attention widths {} / {}", q.cols, out.cols);
  if (host_kv_) {
    CheckChunks(kv_shape_, chunks);
    return host_kv_->Attention(layer, chunks, q, shape, out, stream_);
  }
  const kn::RowMap map = UploadRowMap(chunks);
  if (compute_ == ComputeType::kF32) {
    // The CPU's operation sequence, so quantized weights give the CPU's tokens.
    int max_keys = 0;
    for (const SequenceChunk& chunk : chunks)
      max_keys = std::max(max_keys, chunk.start_position + chunk.num_tokens);
    if (max_keys > kn::kMaxAttentionKeysAsCpu) {
      Fail("--gpu-compute f32 attends over at most {} positions on the GPU, this step {}; use "
           "--gpu-compute bf16 or --kv-offload cpu",
           kn::kMaxAttentionKeysAsCpu, max_keys);
    }
    CheckCuda(kn::AttentionAsCpu(KvLayerView(layer), map, Floats(q), shape.num_heads, shape.scale,
                                 max_keys, Floats(out), stream_),
              "attention");
    return;
  }
  CheckCuda(kn::Attention(KvLayerView(layer), map, Floats(q), shape.num_heads, shape.scale,
                          Floats(out), stream_),
            "attention");
}

}  // namespace zinf::cuda
