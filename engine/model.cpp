// Model::Forward: for each extent in order, prefetch ahead, acquire, compute every token of the
// batch with it, release. Llama-family and OPT differ only in the choices inside each stage.
#include "engine/model.h"

#include <cmath>

#include "engine/error.h"
#include "engine/planner/memory_model.h"
#include "engine/rope.h"
#include "engine/tensor_names.h"

namespace zinf {

namespace tn = tensor_names;

void StepBatch::Clear() {
  tokens.clear();
  positions.clear();
  chunks.clear();
  logit_rows.clear();
}

void StepBatch::AddChunk(int kv_slot, int start_position, std::span<const TokenId> chunk_tokens,
                         bool want_logits) {
  SequenceChunk chunk;
  chunk.kv_slot = kv_slot;
  chunk.start_position = start_position;
  chunk.num_tokens = static_cast<int>(chunk_tokens.size());
  chunk.token_offset = static_cast<int>(tokens.size());
  chunks.push_back(chunk);
  for (size_t i = 0; i < chunk_tokens.size(); ++i) {
    tokens.push_back(chunk_tokens[i]);
    positions.push_back(start_position + static_cast<int>(i));
  }
  if (want_logits) logit_rows.push_back(static_cast<int>(tokens.size()) - 1);
}

void Backend::CheckScaleAddRows(Tensor src, std::span<const int> rows,
                                std::span<const float> scales, Tensor x) {
  ZINF_CHECK(rows.size() == scales.size() && static_cast<int64_t>(rows.size()) <= src.rows &&
                 src.cols == x.cols,
             "scale-add of {} rows ({} scales) from [{}, {}] into [{}, {}]", rows.size(),
             scales.size(), src.rows, src.cols, x.rows, x.cols);
  for (const int row : rows) ZINF_CHECK(row >= 0 && row < x.rows, "row {} of {}", row, x.rows);
}

const std::byte* Backend::LoadResident(const ExtentView& extent) {
  Fail("the {} backend computes from host memory and holds no extent of its own (extent {}); the "
       "placement is not one of this backend's",
       name(), extent.info->name);
}

Model::Model(const Checkpoint& checkpoint, Backend& backend, WeightSource& weights,
             const ModelLimits& limits, const Placement& placement, Backend* host_experts)
    : checkpoint_(checkpoint),
      backend_(backend),
      weights_(weights),
      limits_(limits),
      host_experts_(host_experts) {
  const ModelConfig& c = checkpoint.config;
  const auto shapes = ActivationShapes(c, limits);  // the memory model's, as the planner counts
  auto next = shapes.begin();
  auto allocate = [&] {
    const auto [rows, cols] = *next++;
    return backend.AllocateActivation(rows, cols);
  };
  for (Tensor* tensor :
       {&act_.x, &act_.normed, &act_.q, &act_.k, &act_.v, &act_.attention, &act_.gate, &act_.up,
        &act_.last, &act_.last_normed, &act_.last_projected, &act_.logits}) {
    *tensor = allocate();
  }
  if (c.has_embed_projection()) act_.embedded = allocate();
  if (c.is_moe()) {
    for (Tensor* tensor :
         {&act_.moe_input, &act_.router_logits, &act_.expert_in, &act_.shared_gate})
      *tensor = allocate();
  }
  ZINF_CHECK(next == shapes.end(), "{} activations planned, {} allocated", shapes.size(),
             next - shapes.begin());

  backend.AllocateKvCache(KvShapeFor(c, limits));
  if (c.family == Family::kLlama) {
    const RopeTables tables = BuildRopeTables(c, limits.max_context);
    backend.SetRopeTables(tables.cos, tables.sin, c.head_dim);
  }
  LoadBackendResident(placement);
  MapExperts(placement);
}

void Model::LoadBackendResident(const Placement& placement) {
  const size_t num_extents = checkpoint_.extents.size();
  ZINF_CHECK(placement.size() == num_extents, "{} placements for {} extents", placement.size(),
             num_extents);
  backend_resident_.assign(num_extents, nullptr);
  for (size_t e = 0; e < num_extents; ++e) {
    if (!placement.HeldByBackend(e)) {
      if (checkpoint_.extents[e].kind != ExtentKind::kExpert && placement[e] == Tier::kNvme) {
        read_each_step_.push_back(static_cast<int>(e));
      }
      continue;
    }
    // Uploaded here, at start-up, so a step's time is compute and streaming only, and a failed
    // upload says so instead of looking like a failed step.
    const ExtentView extent = weights_.Acquire(static_cast<int>(e));
    try {
      backend_resident_[e] = backend_.LoadResident(extent);
    } catch (const Error& error) {
      Rethrow(error, fmt::format("loading extent {} into device memory", extent.info->name));
    }
    weights_.Release(static_cast<int>(e));
  }
}

Weight Model::Find(const ExtentView& extent, const std::byte* base, const char* name,
                   bool required) const {
  const TensorInfo* tensor = extent.info->find(name);
  if (tensor == nullptr) {
    if (required) Fail("extent {} has no tensor '{}'", extent.info->name, name);
    return {};
  }
  Weight weight;
  weight.data = base + tensor->offset_in_extent;
  weight.dtype = tensor->dtype;
  weight.rows = tensor->shape.size() == 2 ? tensor->shape[0] : 1;
  weight.cols = tensor->shape.back();
  weight.group_size = tensor->group_size;
  return weight;
}

void Model::Normalize(Tensor x, const Weight& weight, const Weight& bias, Tensor out,
                      Tensor residual) {
  const float eps = static_cast<float>(config().norm_eps);
  const bool opt = config().family == Family::kOpt;
  if (residual.data == nullptr) {
    if (opt) backend_.LayerNorm(x, weight, bias, eps, out);
    else backend_.RmsNorm(x, weight, eps, out);
  } else {
    if (opt) backend_.AddLayerNorm(x, residual, weight, bias, eps, out);
    else backend_.AddRmsNorm(x, residual, weight, eps, out);
  }
}

void Model::Forward(const StepBatch& batch, std::span<float> logits) {
  const int num_tokens = static_cast<int>(batch.tokens.size());
  ZINF_CHECK(num_tokens > 0 && num_tokens <= limits_.max_tokens_per_step,
             "step of {} tokens (limit {})", num_tokens, limits_.max_tokens_per_step);
  ZINF_CHECK(batch.logit_rows.size() <= static_cast<size_t>(limits_.logit_rows()),
             "{} logit rows (limit {})", batch.logit_rows.size(), limits_.logit_rows());
  ZINF_CHECK(logits.size() >= batch.logit_rows.size() * config().vocab_size, "logits buffer");

  SplitIntoMicroBatches(batch, limits_.micro_rows(), micro_batches_);
  const int num_extents = static_cast<int>(checkpoint_.extents.size());
  const int num_read = static_cast<int>(read_each_step_.size());
  const int depth = ReadAheadWindow(weights_.prefetch_depth(), num_read);
  // Prefetching walks only the extents read from the disk every step: a window that also counted
  // those held in DRAM left the disk idle while they computed (Llama-2-70B int4 under 16 GB, its
  // first 30 extents resident: reads and products added up at batch 8, 78% of the bound).
  for (int d = 0; d < depth && d < num_read; ++d) weights_.Prefetch(read_each_step_[d]);
  int read = 0;  // how many of this step's read_each_step_ extents have been acquired
  for (int e = 0; e < num_extents; ++e) {
    ExtentView extent{&checkpoint_.extents[e], {}};
    if (extent.info->kind == ExtentKind::kExpert) continue;  // RunExperts asks for the routed ones
    const std::byte* base = backend_resident_[e];
    const bool from_source = base == nullptr;
    if (from_source) {
      // Reads run ahead of compute; past the last they wrap to the next step's first ones.
      if (read < num_read && read_each_step_[read] == e) {  // the next one read from disk
        if (depth > 0) weights_.Prefetch(read_each_step_[(read + depth) % num_read]);
        ++read;
      }
      extent = weights_.Acquire(e);
      base = backend_.BindExtent(extent);
    }
    try {
      switch (extent.info->kind) {
        // The block schedule: every micro-batch through this extent before the next one.
        case ExtentKind::kEmbedding:
          for (const MicroBatch& micro : micro_batches_) RunEmbedding(extent, base, micro);
          break;
        case ExtentKind::kLayer:
          for (const MicroBatch& micro : micro_batches_) RunLayer(extent, base, micro);
          break;
        case ExtentKind::kHead: RunHead(extent, base, batch, logits); break;
        case ExtentKind::kExpert: break;  // skipped above: RunExperts runs the routed ones
      }
    } catch (const Error& error) {
      Rethrow(error, fmt::format("extent {}", extent.info->name));
    }
    // No host wait here: the source holds the fence until it needs this extent's buffer again.
    if (from_source) weights_.Release(e, backend_.UnbindExtent());
    // Experts run after their layer's extent (or MLP part) is released, so its staging buffer can
    // take one.
    if (extent.info->kind == ExtentKind::kLayer && extent.info->part != LayerPart::kAttention &&
        config().IsMoeLayer(extent.info->layer)) {
      try {
        RunExperts(extent.info->layer, num_tokens);
      } catch (const Error& error) {
        Rethrow(error, fmt::format("the experts of {}", extent.info->name));
      }
    }
  }
  if (config().is_moe()) ++expert_traffic_.steps;
}

void Model::RunEmbedding(const ExtentView& extent, const std::byte* base, const MicroBatch& micro) {
  Tensor x = act_.x.RowRange(micro.row_begin, micro.num_rows);
  const Weight token_embed = Find(extent, base, tn::kTokenEmbed, true);
  if (config().has_embed_projection()) {
    Tensor embedded = act_.embedded.FirstRows(micro.num_rows);
    backend_.Embed(micro.tokens, token_embed, embedded);
    backend_.MatMul(embedded, Find(extent, base, tn::kProjectIn, true), {}, x);
  } else {
    backend_.Embed(micro.tokens, token_embed, x);
  }
  if (config().family == Family::kOpt) {
    backend_.AddPositionEmbedding(micro.positions, config().position_offset,
                                  Find(extent, base, tn::kPositionEmbed, true), x);
  }
}

void Model::RunLayer(const ExtentView& extent, const std::byte* base, const MicroBatch& micro) {
  switch (extent.info->part) {
    case LayerPart::kWhole: RunMlp(extent, base, micro, RunAttention(extent, base, micro)); break;
    // A part's block runs for every micro-batch before the other part's, which may be a different
    // buffer: the residual stream carries everything between them.
    case LayerPart::kAttention:
      backend_.Add(act_.x.RowRange(micro.row_begin, micro.num_rows),
                   RunAttention(extent, base, micro));
      break;
    case LayerPart::kMlp: RunMlp(extent, base, micro, {}); break;
  }
}

Tensor Model::RunAttention(const ExtentView& extent, const std::byte* base,
                           const MicroBatch& micro) {
  const ModelConfig& c = config();
  const int n = micro.num_rows;
  const int layer = extent.info->layer;
  const BlockWeights weight{*this, extent, base};
  Tensor x = act_.x.RowRange(micro.row_begin, n), normed = act_.normed.FirstRows(n);
  Tensor q = act_.q.FirstRows(n), k = act_.k.FirstRows(n), v = act_.v.FirstRows(n);
  Tensor attention = act_.attention.FirstRows(n);
  const float eps = static_cast<float>(c.norm_eps);

  // x + o(attention(norm(x))): o's output is returned for the caller to add.
  Normalize(x, weight(tn::kAttnNorm), weight.optional(tn::kAttnNormBias), normed);
  const Backend::Projection qkv[] = {{weight(tn::kQ), weight.optional(tn::kQBias), q},
                                     {weight(tn::kK), weight.optional(tn::kKBias), k},
                                     {weight(tn::kV), weight.optional(tn::kVBias), v}};
  backend_.MatMuls(normed, qkv);
  if (c.qk_norm) {  // Qwen3: RMSNorm over each head before RoPE
    backend_.RmsNorm(q.Reshaped(c.head_dim), weight(tn::kQNorm), eps, q.Reshaped(c.head_dim));
    backend_.RmsNorm(k.Reshaped(c.head_dim), weight(tn::kKNorm), eps, k.Reshaped(c.head_dim));
  }
  if (c.family == Family::kLlama) {
    backend_.Rope(q, micro.positions, c.num_heads);
    backend_.Rope(k, micro.positions, c.num_kv_heads);
  }
  backend_.StoreKv(layer, micro.chunks, k, v);
  AttentionShape shape;
  shape.num_heads = c.num_heads;
  shape.num_kv_heads = c.num_kv_heads;
  shape.head_dim = c.head_dim;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  backend_.Attention(layer, micro.chunks, q, shape, attention);
  backend_.MatMul(attention, weight(tn::kO), weight.optional(tn::kOBias), normed);
  return normed;
}

void Model::RunMlp(const ExtentView& extent, const std::byte* base, const MicroBatch& micro,
                   Tensor attention_out) {
  const ModelConfig& c = config();
  const int n = micro.num_rows;
  const int layer = extent.info->layer;
  const BlockWeights weight{*this, extent, base};
  Tensor x = act_.x.RowRange(micro.row_begin, n), normed = act_.normed.FirstRows(n);
  const Weight norm = weight(tn::kFfnNorm), norm_bias = weight.optional(tn::kFfnNormBias);

  // x += down(act(norm(x))), x first taking the attention block's output when it is not in x yet.
  const int64_t ffn = c.intermediate_size;
  Tensor gate{act_.gate.data, n, ffn}, up{act_.up.data, n, ffn};
  if (c.IsMoeLayer(layer)) {  // the experts read this input after the extent is released
    Tensor ffn_input = act_.moe_input.RowRange(micro.row_begin, n);
    Normalize(x, norm, norm_bias, ffn_input, attention_out);
    RunRouterAndSharedExpert(extent, base, micro, ffn_input);
    return;
  }
  Normalize(x, norm, norm_bias, normed, attention_out);
  if (c.family == Family::kLlama) {
    const Backend::Projection up_gate[] = {
        {weight(tn::kUp), weight.optional(tn::kUpBias), up},
        {weight(tn::kGate), weight.optional(tn::kGateBias), gate}};
    backend_.MatMuls(normed, up_gate);
    backend_.SiluMul(gate, up, up);
  } else {
    backend_.MatMul(normed, weight(tn::kUp), weight.optional(tn::kUpBias), up);
    backend_.Relu(up);
  }
  backend_.MatMul(up, weight(tn::kDown), weight.optional(tn::kDownBias), normed);
  backend_.Add(x, normed);
}

void Model::RunHead(const ExtentView& extent, const std::byte* base, const StepBatch& batch,
                    std::span<float> logits) {
  const int rows = static_cast<int>(batch.logit_rows.size());
  if (rows == 0) return;
  Tensor last = act_.last.FirstRows(rows), normed = act_.last_normed.FirstRows(rows);
  backend_.GatherRows(act_.x.FirstRows(static_cast<int64_t>(batch.tokens.size())), batch.logit_rows,
                      last);
  Normalize(last, Find(extent, base, tn::kFinalNorm, true),
            Find(extent, base, tn::kFinalNormBias, false), normed);
  Tensor head_input = normed;
  if (config().has_embed_projection()) {
    head_input = act_.last_projected.FirstRows(rows);
    backend_.MatMul(normed, Find(extent, base, tn::kProjectOut, true), {}, head_input);
  }
  Tensor out = act_.logits.FirstRows(rows);
  backend_.MatMul(head_input, Find(extent, base, tn::kLmHead, true), {}, out);
  backend_.CopyToHost(out, logits);
}

}  // namespace zinf
