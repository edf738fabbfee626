// --kv-offload cpu for the CUDA backend: the KV cache lives in DRAM in the CPU backend's layout,
// and attention runs on the CPU over it; only a step's new keys and values, its queries and the
// attention outputs cross PCIe. Synchronous for now: the GPU waits while the CPU attends.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>

#include "engine/backend.h"
#include "engine/cpu_kv_cache.h"
#include "engine/thread_pool.h"

namespace zinf::cuda {

class HostKvAttention {
 public:
  // Room for steps of up to `max_rows` tokens with queries of `q_width` floats and keys/values of
  // shape.num_kv_heads × shape.head_dim: the cache and page-locked transfer buffers allocated
  // here, once; attention on `threads` threads.
  HostKvAttention(const KvCacheShape& shape, int64_t max_rows, int64_t q_width, int threads);
  ~HostKvAttention();
  HostKvAttention(const HostKvAttention&) = delete;
  HostKvAttention& operator=(const HostKvAttention&) = delete;

  // k, v, q and out are device tensors of f32 rows; work is ordered on `stream`.
  void StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v,
               cudaStream_t stream);
  void Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                 const AttentionShape& shape, Tensor out, cudaStream_t stream);

 private:
  cpu::CpuKvCache cache_;
  ThreadPool pool_;
  int64_t max_rows_;
  float* keys_ = nullptr;     // [max_rows, kv_width], page-locked
  float* values_ = nullptr;
  float* queries_ = nullptr;  // [max_rows, q_width]
  float* outputs_ = nullptr;
};

}  // namespace zinf::cuda
