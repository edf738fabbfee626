// HostKvAttention: copies down, the CPU backend's KV cache and attention, copies up.
#include "cuda/host_kv_attention.h"

#include "cuda/cuda_check.h"
#include "engine/cpu_attention.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace {
float* Rows(Tensor t) { return static_cast<float*>(t.data); }

float* Pinned(int64_t floats, const char* what) {
  void* memory = nullptr;
  CheckCuda(cudaMallocHost(&memory, static_cast<size_t>(floats) * sizeof(float)), what);
  return static_cast<float*>(memory);
}
}  // namespace

HostKvAttention::HostKvAttention(const KvCacheShape& shape, int64_t max_rows, int64_t q_width,
                                 int threads)
    : pool_(threads), max_rows_(max_rows) {
  cache_.Allocate(shape);
  const int64_t kv_width = static_cast<int64_t>(shape.num_kv_heads) * shape.head_dim;
  keys_ = Pinned(max_rows * kv_width, "page-locking the offloaded KV cache's key transfers");
  values_ = Pinned(max_rows * kv_width, "page-locking the offloaded KV cache's value transfers");
  queries_ = Pinned(max_rows * q_width, "page-locking the offloaded attention's query transfers");
  outputs_ = Pinned(max_rows * q_width, "page-locking the offloaded attention's output transfers");
}

HostKvAttention::~HostKvAttention() {
  for (float* buffer : {keys_, values_, queries_, outputs_}) cudaFreeHost(buffer);
}

void HostKvAttention::StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v,
                              cudaStream_t stream) {
  ZINF_CHECK(k.rows <= max_rows_ && v.rows == k.rows, "{} KV rows for {}-row transfer buffers",
             k.rows, max_rows_);
  const size_t bytes = static_cast<size_t>(k.rows * k.cols) * sizeof(float);
  CheckCuda(cudaMemcpyAsync(keys_, k.data, bytes, cudaMemcpyDeviceToHost, stream),
            "copying new keys to the offloaded KV cache");
  CheckCuda(cudaMemcpyAsync(values_, v.data, bytes, cudaMemcpyDeviceToHost, stream),
            "copying new values to the offloaded KV cache");
  CheckCuda(cudaStreamSynchronize(stream), "copying new keys and values to the offloaded KV cache");
  cache_.StoreChunks(layer, chunks, keys_, values_, k.cols);
}

void HostKvAttention::Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                                const AttentionShape& shape, Tensor out, cudaStream_t stream) {
  ZINF_CHECK(q.rows <= max_rows_ && out.rows == q.rows && out.cols == q.cols,
             "{} query rows for {}-row transfer buffers", q.rows, max_rows_);
  const size_t bytes = static_cast<size_t>(q.rows * q.cols) * sizeof(float);
  CheckCuda(cudaMemcpyAsync(queries_, q.data, bytes, cudaMemcpyDeviceToHost, stream),
            "copying queries to the CPU's attention");
  CheckCuda(cudaStreamSynchronize(stream), "copying queries to the CPU's attention");
  cpu::AttentionArgs args;
  args.chunks = chunks;
  args.q = queries_;
  args.q_stride = q.cols;
  args.out = outputs_;
  args.out_stride = out.cols;
  args.shape = shape;
  args.k_slot = [&](int slot) { return cache_.Keys(layer, slot); };
  args.v_slot = [&](int slot) { return cache_.Values(layer, slot); };
  cpu::CausalAttention(pool_, args);
  CheckCuda(cudaMemcpyAsync(Rows(out), outputs_, bytes, cudaMemcpyHostToDevice, stream),
            "copying the CPU's attention outputs to the GPU");
  // outputs_ is rewritten by the next layer's attention: wait for this copy out of it.
  CheckCuda(cudaStreamSynchronize(stream), "copying the CPU's attention outputs to the GPU");
}

}  // namespace zinf::cuda
