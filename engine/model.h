// The forward pass of both model families, written once against the Backend interface. Weights
// arrive extent by extent from a WeightSource: embed, layer.0 .. layer.N-1, head.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/micro_batch.h"
#include "engine/planner/placement.h"
#include "engine/weight_source.h"

namespace zinf {

// One step's tokens: several sequences' chunks flattened into rows.
struct StepBatch {
  std::vector<TokenId> tokens;        // [num_tokens]
  std::vector<int> positions;         // [num_tokens]
  std::vector<SequenceChunk> chunks;  // which rows belong to which sequence
  std::vector<int> logit_rows;        // rows whose next-token logits are wanted

  void Clear();
  // Appends a sequence's tokens at consecutive positions from start_position.
  void AddChunk(int kv_slot, int start_position, std::span<const TokenId> chunk_tokens,
                bool want_logits);
};

struct ModelLimits {
  int max_tokens_per_step = 512;  // rows of the activations
  int max_sequences = 8;          // KV-cache slots, and logit rows per step
  int max_context = 512;          // positions per slot
  int max_logit_rows = 0;         // logit rows per step when more than max_sequences (perplexity)
  DType kv_dtype = DType::kF32;   // f32 or int8
  // Rows of a micro-batch (the block schedule); 0: the whole step is one. The per-layer
  // activations hold this many rows; only the residual stream holds the whole step.
  int micro_batch_tokens = 0;

  int logit_rows() const { return std::max(max_sequences, max_logit_rows); }
  int micro_rows() const {
    return micro_batch_tokens > 0 ? std::min(micro_batch_tokens, max_tokens_per_step)
                                  : max_tokens_per_step;
  }
};

// Holds the backend's activations and KV cache for the run, sized by the memory model
// (engine/planner/memory_model.h). Not thread-safe.
class Model {
 public:
  // Loads the extents `placement` has the backend hold (Backend::LoadResident) before returning;
  // every other extent comes from `weights` in every step.
  Model(const Checkpoint& checkpoint, Backend& backend, WeightSource& weights,
        const ModelLimits& limits, const Placement& placement);

  const ModelConfig& config() const { return checkpoint_.config; }
  const ModelLimits& limits() const { return limits_; }

  // Runs the batch through every extent; writes [logit_rows.size(), vocab] logits to host memory.
  void Forward(const StepBatch& batch, std::span<float> logits);

 private:
  struct Activations {
    Tensor x, normed, q, k, v, attention, gate, up, embedded;
    Tensor last, last_normed, last_projected, logits;
  };

  Weight Find(const ExtentView& extent, const std::byte* base, const char* name,
              bool required) const;
  void RunEmbedding(const ExtentView& extent, const std::byte* base, const MicroBatch& micro);
  void RunLayer(const ExtentView& extent, const std::byte* base, const MicroBatch& micro);
  void RunHead(const ExtentView& extent, const std::byte* base, const StepBatch& batch,
               std::span<float> logits);
  void Normalize(Tensor x, const Weight& weight, const Weight& bias, Tensor out);
  void LoadBackendResident(const Placement& placement);

  const Checkpoint& checkpoint_;
  Backend& backend_;
  WeightSource& weights_;
  ModelLimits limits_;
  Activations act_;
  std::vector<MicroBatch> micro_batches_;  // this step's, storage reused across steps
  // Per extent: its base in device memory when the backend holds it, else nullptr.
  std::vector<const std::byte*> backend_resident_;
  std::vector<int> from_source_;  // the extents the weight source serves every step, in order
};

}  // namespace zinf
