// HostKvAttention: copies down, the CPU backend's KV cache and attention in host callbacks of the
// compute stream, copies up; all in that stream's order.
#include "cuda/host_kv_attention.h"

#include <vector>

#include "cpu/attention.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
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
    : pool_(threads),
      max_rows_(max_rows),
      kv_width_(static_cast<int64_t>(shape.num_kv_heads) * shape.head_dim),
      q_width_(q_width) {
  cache_.Allocate(shape);
  keys_ = Pinned(max_rows * kv_width_, "page-locking the offloaded KV cache's key transfers");
  values_ = Pinned(max_rows * kv_width_, "page-locking the offloaded KV cache's value transfers");
  queries_ = Pinned(max_rows * q_width, "page-locking the offloaded attention's query transfers");
  outputs_ = Pinned(max_rows * q_width, "page-locking the offloaded attention's output transfers");
}

HostKvAttention::~HostKvAttention() {
  // The stream has synchronised; after an error it may have returned while a callback still ran.
  jobs_.WaitWhileRunning();
  for (float* buffer : {keys_, values_, queries_, outputs_}) cudaFreeHost(buffer);
}

// The stream runs the callback once the copies queued before it have landed and holds the work
// queued after it until it returns: the CPU's part is ordered like a kernel, with no host wait.
// Callbacks may not call CUDA, and neither do these.
void HostKvAttention::QueueOnHost(cudaStream_t stream, std::function<void()> work,
                                  const char* what) {
  void* job = jobs_.Add(std::move(work));
  const cudaError_t status = cudaLaunchHostFunc(stream, &cuda::HostJobQueue::Run, job);
  if (status != cudaSuccess) jobs_.CancelLast();
  CheckCuda(status, what);
}

void HostKvAttention::StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v,
                              cudaStream_t stream) {
  // The kernels below write these page-locked buffers directly: nothing may overrun them.
  ZINF_CHECK(k.rows <= max_rows_ && v.rows == k.rows, "{} KV rows for {}-row transfer buffers",
             k.rows, max_rows_);
  ZINF_CHECK(k.cols == kv_width_ && v.cols == kv_width_, "KV rows of {} for {}-wide buffers",
             k.cols, kv_width_);
  // Written by kernels into the page-locked buffers rather than copied: any copy on this stream,
  // either way, queues on the copy engines behind the weight stream's slot copies (1.2 GB, 22 ms
  // each for OPT-30B), once per layer. The callback runs after the kernels have completed, when
  // their writes are visible to the host.
  const int64_t count = k.rows * k.cols;
  CheckCuda(kernels::CopyByKernel(Rows(k), count, keys_, stream),
            "writing new keys for the offloaded KV cache");
  CheckCuda(kernels::CopyByKernel(Rows(v), count, values_, stream),
            "writing new values for the offloaded KV cache");
  QueueOnHost(
      stream,
      [this, layer, chunks = std::vector<SequenceChunk>(chunks.begin(), chunks.end()),
       width = k.cols] {
        try {
          cache_.StoreChunks(layer, chunks, keys_, values_, width);
        } catch (const std::exception& error) {
          Rethrow(error, fmt::format("storing layer {}'s new keys and values in DRAM", layer));
        }
      },
      "queueing the offloaded KV cache's store");
}

void HostKvAttention::Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                                const AttentionShape& shape, Tensor out, cudaStream_t stream) {
  ZINF_CHECK(q.rows <= max_rows_ && out.rows == q.rows && out.cols == q.cols,
             "{} query rows for {}-row transfer buffers", q.rows, max_rows_);
  ZINF_CHECK(q.cols <= q_width_, "query rows of {} for {}-wide buffers", q.cols, q_width_);
  CheckCuda(kernels::CopyByKernel(Rows(q), q.rows * q.cols, queries_, stream),
            "writing queries for the CPU's attention");
  QueueOnHost(
      stream,
      [this, layer, chunks = std::vector<SequenceChunk>(chunks.begin(), chunks.end()), shape,
       q_stride = q.cols, out_stride = out.cols] {
        cpu::AttentionArgs args;
        args.chunks = chunks;
        args.q = queries_;
        args.q_stride = q_stride;
        args.out = outputs_;
        args.out_stride = out_stride;
        args.shape = shape;
        args.k_slot = [&](int slot) { return cache_.Keys(layer, slot); };
        args.v_slot = [&](int slot) { return cache_.Values(layer, slot); };
        try {
          cpu::CausalAttention(pool_, args);
        } catch (const std::exception& error) {
          Rethrow(error, fmt::format("layer {}'s attention on the CPU", layer));
        }
      },
      "queueing the CPU's attention");
  // Read by a kernel rather than copied, as above.
  CheckCuda(kernels::CopyByKernel(outputs_, q.rows * q.cols, Rows(out), stream),
            "reading the CPU's attention outputs into the GPU");
}

}  // namespace zinf::cuda
