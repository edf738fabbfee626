// --kv-offload cpu for the CUDA backend: the KV cache lives in DRAM in the CPU backend's layout,
// and attention runs on the CPU over it; only a step's new keys and values, its queries and the
// attention outputs cross PCIe. The CPU's work is queued on the compute stream as host callbacks,
// so the host thread never waits for it and the copy stream streams the next layers meanwhile.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <span>

#include "cpu/kv_cache.h"
#include "cpu/thread_pool.h"
#include "cuda/host/host_job_queue.h"
#include "engine/backend.h"

namespace zinf::cuda {

class HostKvAttention {
 public:
  // Room for steps of up to `max_rows` tokens with queries of `q_width` floats and keys/values of
  // shape.num_kv_heads × shape.head_dim: the cache and page-locked transfer buffers allocated
  // here, once; attention on `threads` threads.
  HostKvAttention(const KvCacheShape& shape, int64_t max_rows, int64_t q_width, int threads);
  // The stream the work was queued on must have synchronised (nothing of it still to run).
  ~HostKvAttention();
  HostKvAttention(const HostKvAttention&) = delete;
  HostKvAttention& operator=(const HostKvAttention&) = delete;

  // k, v, q and out are device tensors of f32 rows. Both queue their work on `stream` and return
  // without waiting for it; `chunks` is copied.
  void StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v,
               cudaStream_t stream);
  void Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                 const AttentionShape& shape, Tensor out, cudaStream_t stream);
  // After `stream` synchronised: throws the first failure of the CPU's part, if any.
  void ThrowIfFailed() const { jobs_.ThrowIfFailed(); }

 private:
  void QueueOnHost(cudaStream_t stream, std::function<void()> work, const char* what);

  cpu::CpuKvCache cache_;
  cpu::ThreadPool pool_;
  cuda::HostJobQueue jobs_;
  int64_t max_rows_;
  int64_t kv_width_, q_width_;  // the transfer buffers' row widths
  // One set of transfer buffers is enough: the copies into them and the callbacks reading them
  // are all on one stream, so each use ends before the next begins.
  float* keys_ = nullptr;  // [max_rows, kv_width], page-locked
  float* values_ = nullptr;
  float* queries_ = nullptr;  // [max_rows, q_width]
  float* outputs_ = nullptr;
};

}  // namespace zinf::cuda
