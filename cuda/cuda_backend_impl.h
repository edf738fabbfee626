// The CUDA backend's class, private to cuda/: f32 activations and the KV cache in one device
// pool; weights loaded at start-up (LoadResident), or streamed every step into a ring of device slots on
// a copy stream (cuda/host/slot_ring.h orders it, events order the streams, and the weight source
// holds a fence for the host bytes, so the layer loop has no host wait); projections through
// cuBLAS, everything else through the kernels in cuda/kernels*.cu, on one compute stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/device_pool.h"
#include "cuda/handles.h"
#include "cuda/host/slot_ring.h"
#include "cuda/host_kv_attention.h"
#include "cuda/kernels.h"

namespace zinf::cuda {

// An activation's device memory (both backends keep activations in f32).
inline float* Floats(Tensor t) { return static_cast<float*>(t.data); }

// Not thread-safe (one driving thread, like every Backend).
class CudaBackend final : public Backend {
 public:
  // Ops must run on the thread that constructed the backend or one that has selected the same
  // device; Embed and CopyFromHost (the first op of a step or test) select it again.
  CudaBackend(const Checkpoint& checkpoint, const ModelLimits& limits, const CudaOptions& options);
  ~CudaBackend() override;
  std::string name() const override { return name_; }

  Tensor AllocateActivation(int64_t rows, int64_t cols) override;
  void AllocateKvCache(const KvCacheShape& shape) override;
  const std::byte* LoadResident(const ExtentView& extent) override;
  const std::byte* BindExtent(const ExtentView& extent) override;
  CopyFence UnbindExtent() override;
  void UseHostMemory(std::span<const std::byte> region) override;
  // Waits for copies not yet counted (outside the layer loop: bench reads it between runs).
  TransferStats transfer_stats() const override;

  void Embed(std::span<const TokenId> token_ids, const Weight& table, Tensor out) override;
  void AddPositionEmbedding(std::span<const int> positions, int position_offset,
                            const Weight& table, Tensor x) override;
  void MatMul(Tensor x, const Weight& w, const Weight& bias, Tensor out) override;
  void RmsNorm(Tensor x, const Weight& weight, float eps, Tensor out) override;
  void LayerNorm(Tensor x, const Weight& weight, const Weight& bias, float eps,
                 Tensor out) override;
  void AddRmsNorm(Tensor x, Tensor residual, const Weight& weight, float eps, Tensor out) override;
  void AddLayerNorm(Tensor x, Tensor residual, const Weight& weight, const Weight& bias, float eps,
                    Tensor out) override;
  void SetRopeTables(std::span<const float> cos, std::span<const float> sin, int head_dim) override;
  void Rope(Tensor x, std::span<const int> positions, int num_heads) override;
  void StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v) override;
  void Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                 const AttentionShape& shape, Tensor out) override;
  void SiluMul(Tensor gate, Tensor up, Tensor out) override;
  void Relu(Tensor x) override;
  void Add(Tensor x, Tensor y) override;
  void GatherRows(Tensor x, std::span<const int> rows, Tensor out) override;
  void ScaleAddRows(Tensor src, std::span<const int> rows, std::span<const float> scales,
                    Tensor x) override;
  void CopyToHost(Tensor x, std::span<float> host) override;
  void CopyFromHost(std::span<const float> host, Tensor x) override;

 private:
  // Device int arrays refilled from the host only when no entry holds the contents asked for:
  // the same positions and row maps serve every layer of a step, once per micro-batch, and the
  // micro-batches take turns within each layer, so with kDeviceIntsEntries entries each crosses
  // PCIe once per step. Repeats matter more than their bytes: from pageable memory the driver may
  // wait for the stream before it copies, which would stall the host behind queued work.
  struct DeviceInts {
    struct Entry {
      int* data = nullptr;
      std::vector<int> host;  // what `data` holds
      uint64_t last_use = 0;
    };
    std::vector<Entry> entries;
    size_t capacity = 0;  // ints per entry
    uint64_t uses = 0;
  };
  struct GemmOperand {
    const void* data;
    kernels::GemmType type;
  };

  DeviceInts MakeInts(size_t capacity, const char* what);
  const int* Upload(DeviceInts& buffer, std::span<const int> values, const char* what);
  kernels::RowMap UploadRowMap(std::span<const SequenceChunk> chunks);
  kernels::WeightRef Ref(const Weight& w) const;
  GemmOperand PrepareWeight(const Weight& w);
  // MatMul without the bias: the CPU's int8 / int4 arithmetic (f32 compute), or a cuBLAS GEMM.
  void MatMulQuantizedAsCpu(Tensor x, const Weight& w, Tensor out);
  void MatMulGemm(Tensor x, const Weight& w, Tensor out);
  kernels::KvLayer KvLayerView(int layer) const;
  uint64_t KvElementBytes() const;

  // Shared with the weight source's copy fences, which may outlive the backend.
  using SharedEvent = std::shared_ptr<CUevent_st>;
  // One device slot of the streaming ring: `read` is recorded on the compute stream when the
  // extent's last op has been queued; the slot's next copy waits for it.
  struct Slot {
    std::byte* data = nullptr;
    Event read;
  };
  // One streamed copy: `started` and `copied` recorded on the copy stream around it. The compute
  // stream waits for `copied`, and so does the weight source's fence for the host bytes. Its time
  // is read once the copy is known to be complete, then the events serve a later copy.
  struct Copy {
    SharedEvent started, copied;
    uint64_t bytes = 0;
  };

  const std::byte* StreamIntoSlot(const ExtentView& extent);
  static Copy NewCopy();
  Copy TakeSpareCopy();
  static TransferStats Timed(const Copy& copy);  // waits for the copy if still running
  void CountCompletedCopies();
  void ConvertF32Matrices(const ExtentInfo& extent, std::byte* base, const std::string& what);

  CudaMemory plan_;
  ComputeType compute_;
  int device_ = 0;
  std::string name_;
  std::unique_ptr<DevicePool> pool_;  // declared before the handles: destroyed after them
  Stream stream_owner_;
  CublasHandle cublas_owner_;
  Stream copy_stream_owner_;
  cudaStream_t stream_ = nullptr;       // stream_owner_'s: every kernel and GEMM
  cublasHandle_t cublas_ = nullptr;     // cublas_owner_'s
  cudaStream_t copy_stream_ = nullptr;  // copy_stream_owner_'s: host-to-device weight copies

  int num_streamed_ = 0;  // extents copied into the slots every step
  std::unique_ptr<cuda::SlotRing> ring_;
  std::vector<Slot> slots_;
  std::optional<SlotUse> bound_;  // the streamed extent bound now
  SharedEvent bound_copied_;      // its copy's end, for UnbindExtent's fence
  // Timings are read after a step's final synchronisation, not per extent, which would wait:
  TransferStats transfer_stats_;        // copies counted so far
  std::vector<Copy> copies_in_flight_;  // queued since, oldest first
  // Reused oldest first: a copy's events then serve again only after every later copy's have, so
  // a fence called late waits on the latest possible copy, never the one just queued.
  std::deque<Copy> spare_copies_;
  std::vector<const void*> pinned_;  // host regions registered with cudaHostRegister
  // Results (the logits) pass through here a chunk at a time: a copy into page-locked memory runs
  // at the link's rate, one into the caller's ordinary memory at a fraction of it. At most
  // kResultsStagingFloats, allocated at the first copy.
  static constexpr size_t kResultsStagingFloats = size_t{4} << 20;  // 16 MiB
  PinnedBuffer<float> results_staging_;

  void* cast_buffer_ = nullptr;    // GEMM inputs in f16/bf16
  void* matrix_buffer_ = nullptr;  // one dequantised (or to-be-converted) matrix
  DeviceInts token_ids_, positions_, row_slots_, row_positions_, gather_rows_;
  DeviceInts scatter_rows_, scatter_scales_;  // MoE: an expert's tokens and routing weights
  std::vector<int> scale_bits_;               // the weights' bits, on their way up
  std::vector<SequenceChunk> mapped_chunks_;  // what row_map_ (on the device) describes
  kernels::RowMap row_map_;

  KvCacheShape kv_shape_;
  // --kv-offload cpu: the KV cache and attention on the host; StoreKv and Attention go to it.
  std::unique_ptr<HostKvAttention> host_kv_;
  kernels::KvType kv_type_ = kernels::KvType::kF32;
  void* keys_ = nullptr;
  void* values_ = nullptr;
  float* key_scales_ = nullptr;
  float* value_scales_ = nullptr;

  float* rope_cos_ = nullptr;
  float* rope_sin_ = nullptr;
  size_t rope_capacity_ = 0;  // floats per table
  int rope_head_dim_ = 0;
  int64_t rope_positions_ = 0;

  std::unordered_set<const void*> converted_;  // f32 matrices held as bf16 (bf16 compute)
};

}  // namespace zinf::cuda
