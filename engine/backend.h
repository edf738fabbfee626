// The compute backend interface: the ops one forward pass needs, written once in engine/model.cpp
// and implemented per device (CPU here, CUDA in cuda/). Activations live in backend memory and are
// named by Tensor handles; weights arrive as extents bound through BindExtent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/dtype.h"
#include "engine/tokenizer.h"
#include "engine/weight_source.h"

namespace zinf {

// A 2-D activation in backend memory: [rows, cols] row-major, f32 on the CPU backend.
struct Tensor {
  void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  // The same memory seen as [rows * cols / new_cols, new_cols] (e.g. per-head views).
  Tensor Reshaped(int64_t new_cols) const { return {data, rows * cols / new_cols, new_cols}; }
  Tensor FirstRows(int64_t num_rows) const { return {data, num_rows, cols}; }
  // Rows [begin, begin + count) of an f32 activation (both backends keep activations in f32).
  Tensor RowRange(int64_t begin, int64_t count) const {
    return {static_cast<float*>(data) + begin * cols, count, cols};
  }
};

// A weight inside a bound extent: a matrix [rows, cols] ([out, in]) or a vector [cols] (rows = 1).
struct Weight {
  const void* data = nullptr;  // in backend-visible memory
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int group_size = 0;  // int4 only: elements per (scale, min) group along a row

  explicit operator bool() const { return data != nullptr; }
};

// One sequence's tokens inside a step's flattened batch.
struct SequenceChunk {
  int kv_slot = 0;         // which KV-cache slot holds this sequence
  int start_position = 0;  // position of the chunk's first token
  int num_tokens = 0;
  int token_offset = 0;  // first row of the chunk in the step's activations
};

struct KvCacheShape {
  int num_layers = 0;
  int num_slots = 0;    // sequences resident at once
  int max_context = 0;  // positions per slot
  int num_kv_heads = 0;
  int head_dim = 0;
  DType dtype = DType::kF32;  // f32, f16 (CPU), or int8 with a scale per (position, KV head)
};

struct AttentionShape {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  float scale = 0;  // applied to q·k
};

// Weights a backend copied into its device memory every step (streamed extents), since it was
// created, and how long its copy engine was busy with them (measured on the device, not the host).
struct TransferStats {
  uint64_t bytes = 0;
  double copy_seconds = 0;
};

// Not thread-safe: one forward-pass thread drives a backend. Failures throw zinf::Error.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Memory, sized once per run; nothing is allocated in the step loop.
  virtual Tensor AllocateActivation(int64_t rows, int64_t cols) = 0;
  virtual void AllocateKvCache(const KvCacheShape& shape) = 0;

  // Called once at start-up, before any step, for each extent the placement has the backend hold
  // (Placement::HeldByBackend): copies it into device memory and returns its base there. The host
  // bytes may be reused once this returns. A backend that computes from host memory holds none.
  virtual const std::byte* LoadResident(const ExtentView& extent);
  // Makes a streamed extent's bytes visible to the device; returns its base there. The host bytes must
  // stay untouched until the fence UnbindExtent returns has been called.
  virtual const std::byte* BindExtent(const ExtentView& extent) = 0;
  // Done with the bound extent. Returns without waiting for the device; the fence (empty when the
  // host bytes are already free to reuse) goes to WeightSource::Release.
  virtual CopyFence UnbindExtent() = 0;
  // Host memory extents will arrive in (WeightSource::HostMemory), offered once at start: a GPU
  // backend page-locks it so copies from it run asynchronously at full PCIe rate.
  virtual void UseHostMemory(std::span<const std::byte> /*region*/) {}
  // Zero for a backend that computes where the weights already are (the CPU).
  virtual TransferStats transfer_stats() const { return {}; }

  // rows of `out` = token_ids.size(); token_ids are host memory.
  virtual void Embed(std::span<const TokenId> token_ids, const Weight& table, Tensor out) = 0;
  // x[row] += table[positions[row] + position_offset]
  virtual void AddPositionEmbedding(std::span<const int> positions, int position_offset,
                                    const Weight& table, Tensor x) = 0;
  // out[t, r] = x[t, :] · w[r, :] + bias[r]; bias may be empty.
  virtual void MatMul(Tensor x, const Weight& w, const Weight& bias, Tensor out) = 0;
  // MatMul of one x with each projection; a backend may share work on x between them.
  struct Projection {
    Weight w;
    Weight bias;
    Tensor out;
  };
  virtual void MatMuls(Tensor x, std::span<const Projection> projections) {
    for (const Projection& p : projections) MatMul(x, p.w, p.bias, p.out);
  }
  virtual void RmsNorm(Tensor x, const Weight& weight, float eps, Tensor out) = 0;
  virtual void LayerNorm(Tensor x, const Weight& weight, const Weight& bias, float eps,
                         Tensor out) = 0;
  // x += residual, then out = norm(x); out may be residual. A device backend fuses the two so
  // the residual stream makes one trip through memory instead of three.
  virtual void AddRmsNorm(Tensor x, Tensor residual, const Weight& weight, float eps, Tensor out) {
    Add(x, residual);
    RmsNorm(x, weight, eps, out);
  }
  virtual void AddLayerNorm(Tensor x, Tensor residual, const Weight& weight, const Weight& bias,
                            float eps, Tensor out) {
    Add(x, residual);
    LayerNorm(x, weight, bias, eps, out);
  }
  // Rotates pairs (i, i + head_dim/2) of each head (the Hugging Face rotate_half convention) by
  // the angles in the cos/sin tables ([max_context, head_dim/2]) set with SetRopeTables.
  virtual void SetRopeTables(std::span<const float> cos, std::span<const float> sin,
                             int head_dim) = 0;
  virtual void Rope(Tensor x, std::span<const int> positions, int num_heads) = 0;
  // Writes k and v rows (kv_dim wide) of every chunk into the cache at their positions.
  virtual void StoreKv(int layer, std::span<const SequenceChunk> chunks, Tensor k, Tensor v) = 0;
  // Causal attention of each chunk's queries over its slot's cached keys/values.
  virtual void Attention(int layer, std::span<const SequenceChunk> chunks, Tensor q,
                         const AttentionShape& shape, Tensor out) = 0;
  virtual void SiluMul(Tensor gate, Tensor up, Tensor out) = 0;  // out = silu(gate) * up
  virtual void Relu(Tensor x) = 0;
  virtual void Add(Tensor x, Tensor y) = 0;  // x += y
  // out[i] = x[rows[i]]
  virtual void GatherRows(Tensor x, std::span<const int> rows, Tensor out) = 0;
  // x[rows[i]] += scales[i] * src[i]: an expert's outputs added into the residual stream of the
  // tokens routed to it, each weighted by its routing probability. rows and scales are host
  // memory, free to reuse once this returns.
  virtual void ScaleAddRows(Tensor src, std::span<const int> rows, std::span<const float> scales,
                            Tensor x) = 0;
  virtual void CopyToHost(Tensor x, std::span<float> host) = 0;
  // x = host (rows × cols floats); the host memory may be reused once this returns.
  virtual void CopyFromHost(std::span<const float> host, Tensor x) = 0;

 protected:
  // ScaleAddRows' arguments, checked on the host the same way by every backend: one scale per
  // row, no more rows than src holds, matching widths, every row inside x.
  static void CheckScaleAddRows(Tensor src, std::span<const int> rows,
                                std::span<const float> scales, Tensor x);
};

}  // namespace zinf
