// The CPU backend: f32 activations and an f32, f16 or int8 KV cache in host memory, ops
// parallelised over a thread pool. It is the reference every other backend is checked against,
// and the fallback.
#pragma once

#include <vector>

#include "cpu/kv_cache.h"
#include "cpu/product_sequence.h"
#include "cpu/thread_pool.h"
#include "cpu/zeroed_buffer.h"
#include "engine/backend.h"

namespace zinf::cpu {

// Owns its activations, KV cache and thread pool. Not thread-safe (one driving thread).
class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int num_threads);
  ~CpuBackend() override;
  std::string name() const override;

  Tensor AllocateActivation(int64_t rows, int64_t cols) override;
  void AllocateKvCache(const KvCacheShape& shape) override;
  // Activations and KV cache allocated so far: what the memory model promised the planner.
  uint64_t allocated_bytes() const;
  const std::byte* BindExtent(const ExtentView& extent) override;
  CopyFence UnbindExtent() override { return {}; }  // computed in place: nothing pending

  void Embed(std::span<const TokenId> token_ids, const Weight& table, Tensor out) override;
  void AddPositionEmbedding(std::span<const int> positions, int position_offset,
                            const Weight& table, Tensor x) override;
  void MatMul(Tensor x, const Weight& w, const Weight& bias, Tensor out) override;
  void MatMuls(Tensor x, std::span<const Projection> projections) override;
  void RmsNorm(Tensor x, const Weight& weight, float eps, Tensor out) override;
  void AddRmsNorm(Tensor x, Tensor residual, const Weight& weight, float eps, Tensor out) override;
  void LayerNorm(Tensor x, const Weight& weight, const Weight& bias, float eps,
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
  ThreadPool pool_;
  ProductSequence products_;
  // From cache lines, as the KV cache (cpu/cache_line_vector.h): rows of 768 floats 16 bytes off
  // a line would make every row's 64-byte loads straddle two.
  std::vector<cpu::ZeroedBuffer<float>> activations_;
  uint64_t activation_bytes_ = 0;
  cpu::CpuKvCache kv_cache_;
  std::vector<float> rope_cos_;  // [max_context][head_dim / 2]
  std::vector<float> rope_sin_;
  int rope_head_dim_ = 0;
};

}  // namespace zinf::cpu
