// The forward pass of both model families, written once against the Backend interface. Weights
// arrive extent by extent from a WeightSource: embed, layer.0 .. layer.N-1, head.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/expert_routing.h"
#include "engine/micro_batch.h"
#include "engine/planner/placement.h"
#include "engine/routing_profile.h"
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
  DType kv_dtype = DType::kF32;   // f32, f16 (CPU) or int8
  // Rows of a micro-batch (the block schedule); 0: the whole step is one. The per-layer
  // activations hold this many rows; only the residual stream holds the whole step.
  int micro_batch_tokens = 0;

  int logit_rows() const { return std::max(max_sequences, max_logit_rows); }
  int micro_rows() const {
    return micro_batch_tokens > 0 ? std::min(micro_batch_tokens, max_tokens_per_step)
                                  : max_tokens_per_step;
  }
};

// Expert weights a mixture-of-experts model moved to compute since the Model was made: those of
// the experts its steps' tokens were routed to, against what moving every expert of each sparse
// layer (a dense engine's traffic) would have been. "Moved" counts the experts the placement does
// not keep where the backend computes: streamed from the file on the CPU, copied to the GPU on CUDA.
struct ExpertTraffic {
  uint64_t steps = 0;
  uint64_t experts_used = 0;   // (layer, expert) pairs some token of a step was routed to
  uint64_t experts_total = 0;  // num_experts per sparse layer per step
  uint64_t bytes_moved = 0;    // extents' padded bytes of the used experts that moved
  uint64_t bytes_dense = 0;    // the same over every expert of each sparse layer
};

// Holds the backend's activations and KV cache for the run, sized by the memory model
// (engine/planner/memory_model.h). Not thread-safe.
class Model {
 public:
  // Loads the extents `placement` has the backend hold (Backend::LoadResident) before returning;
  // every other extent comes from `weights` in every step. With placement.host_computes_experts,
  // `host_experts` (a CPU backend) computes the experts the backend does not hold, from host
  // memory; the rest of the pass runs on `backend` as always.
  Model(const Checkpoint& checkpoint, Backend& backend, WeightSource& weights,
        const ModelLimits& limits, const Placement& placement, Backend* host_experts = nullptr);

  const ModelConfig& config() const { return checkpoint_.config; }
  const ModelLimits& limits() const { return limits_; }

  // Runs the batch through every extent; writes [logit_rows.size(), vocab] logits to host memory.
  void Forward(const StepBatch& batch, std::span<float> logits);

  const ExpertTraffic& expert_traffic() const { return expert_traffic_; }
  // From the next step on, counts every sparse layer's routing into `profile` (sized for this
  // model; null stops counting).
  void RecordRouting(RoutingProfile* profile) { routing_record_ = profile; }

 private:
  // The buffers an expert's SwiGLU runs in: the step's FFN inputs, one micro-batch of the
  // expert's gathered rows, its gate and up products and its output.
  struct ExpertBuffers {
    Tensor step_input, in, gate, up, out;
  };
  struct Activations {
    Tensor x, normed, q, k, v, attention, gate, up, embedded;
    Tensor last, last_normed, last_projected, logits;
    // Mixture of experts: the FFN input and router logits of the whole step, one expert's
    // gathered rows, the shared expert's gate.
    Tensor moe_input, router_logits, expert_in, shared_gate;
  };

  Weight Find(const ExtentView& extent, const std::byte* base, const char* name,
              bool required) const;
  void RunEmbedding(const ExtentView& extent, const std::byte* base, const MicroBatch& micro);
  // A layer block's weights by name, from its extent as bound: weight(name) must be there,
  // weight.optional(name) may not (an empty Weight).
  struct BlockWeights {
    const Model& model;
    const ExtentView& extent;
    const std::byte* base;
    Weight operator()(const char* name) const { return model.Find(extent, base, name, true); }
    Weight optional(const char* name) const { return model.Find(extent, base, name, false); }
  };
  // A layer extent, or one of its parts (engine/layer_parts.h).
  void RunLayer(const ExtentView& extent, const std::byte* base, const MicroBatch& micro);
  // The attention block; returns o's output, not yet added to the residual stream.
  Tensor RunAttention(const ExtentView& extent, const std::byte* base, const MicroBatch& micro);
  // The MLP block (a mixture of experts' router and shared expert), first adding `attention_out`
  // to the residual stream unless it is empty (the attention part added it already).
  void RunMlp(const ExtentView& extent, const std::byte* base, const MicroBatch& micro,
              Tensor attention_out);
  // Mixture-of-experts layers (engine/moe_ffn.cpp): per micro-batch the router and the shared
  // expert from the layer's extent; once the extent is released, the routed experts.
  void RunRouterAndSharedExpert(const ExtentView& extent, const std::byte* base,
                                const MicroBatch& micro, Tensor ffn_input);
  void RunExperts(int layer, int num_tokens);
  // On `compute`: the backend, or host_experts_ (its output then copied to the backend and added
  // there, in the same order).
  void RunExpert(Backend& compute, const ExtentView& extent, const std::byte* base,
                 const ExpertTokens& tokens);
  void AllocateHostExpertBuffers();
  void MapExperts(const Placement& placement);
  void RunHead(const ExtentView& extent, const std::byte* base, const StepBatch& batch,
               std::span<float> logits);
  // out = norm(x) by the family's norm; with a `residual`, x += residual first, fused with the
  // norm so the residual stream makes one trip through memory instead of three.
  void Normalize(Tensor x, const Weight& weight, const Weight& bias, Tensor out,
                 Tensor residual = {});
  void LoadBackendResident(const Placement& placement);

  const Checkpoint& checkpoint_;
  Backend& backend_;
  WeightSource& weights_;
  ModelLimits limits_;
  Activations act_;
  std::vector<MicroBatch> micro_batches_;  // this step's, storage reused across steps
  // Per extent: its base in device memory when the backend holds it, else nullptr.
  std::vector<const std::byte*> backend_resident_;
  // The extents the weight source reads from the disk every step (the others it serves it holds in
  // DRAM), in order: the prefetch window walks these only.
  std::vector<int> read_each_step_;
  // (experts aside: a step asks only for those it routes to)
  // Mixture of experts: per layer its experts' extent indices (empty for a dense layer), and per
  // extent whether its bytes move to compute each time it is used (ExpertTraffic).
  std::vector<std::vector<int>> expert_extents_;
  std::vector<bool> moves_when_used_;
  // Placement::host_computes_experts: the backend computing the experts marked here, and its
  // buffers in host memory.
  Backend* host_experts_ = nullptr;
  std::vector<bool> computed_on_host_;
  ExpertBuffers host_buffers_;
  StepRouting routing_;
  std::vector<float> host_router_logits_, host_shared_gate_;
  std::vector<int> identity_rows_;
  std::vector<int> experts_to_fetch_;  // one layer's routed experts the source serves, in order
  ExpertTraffic expert_traffic_;
  RoutingProfile* routing_record_ = nullptr;
  std::vector<int> rows_per_expert_;  // one layer's, reused
};

}  // namespace zinf
