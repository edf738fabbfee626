// The canonical tensor table of a model: extents, tensor names and shapes, derived from its config.
#include "model_formats/canonical_tensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/tensor_names.h"

namespace zinf::formats {

namespace names = zinf::tensor_names;

std::string ExtentName(ExtentKind kind, int layer, int expert) {
  switch (kind) {
    case ExtentKind::kEmbedding: return "embed";
    case ExtentKind::kLayer: return fmt::format("layer.{}", layer);
    case ExtentKind::kExpert: return fmt::format("layer.{}.expert.{}", layer, expert);
    case ExtentKind::kHead: return "head";
  }
  return "?";
}

const char* ExtentKindName(ExtentKind kind) {
  switch (kind) {
    case ExtentKind::kEmbedding: return "embedding";
    case ExtentKind::kLayer: return "layer";
    case ExtentKind::kExpert: return "expert";
    case ExtentKind::kHead: return "head";
  }
  return "?";
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

namespace {

ExpectedExtent EmbeddingExtent(const ModelConfig& config) {
  ExpectedExtent extent{ExtentName(ExtentKind::kEmbedding, -1), ExtentKind::kEmbedding, -1, -1, {}};
  extent.tensors.push_back({names::kTokenEmbed, {config.vocab_size, config.embed_dim()}});
  if (config.family == Family::kOpt) {
    // OPT's learned positions are stored shifted by position_offset (2), hence the extra rows.
    extent.tensors.push_back(
        {names::kPositionEmbed,
         {config.max_position_embeddings + config.position_offset, config.hidden_size}});
    if (config.has_embed_projection()) {
      extent.tensors.push_back({names::kProjectIn, {config.hidden_size, config.embed_dim()}});
    }
  }
  return extent;
}

ExpectedExtent LayerExtent(const ModelConfig& config, int layer) {
  const int64_t hidden = config.hidden_size;
  const int64_t q_dim = config.q_dim();
  const int64_t kv_dim = config.kv_dim();
  const int64_t ffn = config.intermediate_size;
  // LayerNorm (OPT) has a bias next to every norm weight; RMSNorm (Llama family) has none.
  const bool norm_bias = config.family == Family::kOpt;

  ExpectedExtent extent{ExtentName(ExtentKind::kLayer, layer), ExtentKind::kLayer, layer, -1, {}};
  std::vector<ExpectedTensor>& tensors = extent.tensors;
  tensors.push_back({names::kAttnNorm, {hidden}});
  if (norm_bias) tensors.push_back({names::kAttnNormBias, {hidden}});
  tensors.push_back({names::kQ, {q_dim, hidden}});
  tensors.push_back({names::kK, {kv_dim, hidden}});
  tensors.push_back({names::kV, {kv_dim, hidden}});
  tensors.push_back({names::kO, {hidden, q_dim}});
  if (config.qkv_bias) {
    tensors.push_back({names::kQBias, {q_dim}});
    tensors.push_back({names::kKBias, {kv_dim}});
    tensors.push_back({names::kVBias, {kv_dim}});
  }
  if (config.o_bias) tensors.push_back({names::kOBias, {hidden}});
  if (config.qk_norm) {
    tensors.push_back({names::kQNorm, {config.head_dim}});
    tensors.push_back({names::kKNorm, {config.head_dim}});
  }
  tensors.push_back({names::kFfnNorm, {hidden}});
  if (norm_bias) tensors.push_back({names::kFfnNormBias, {hidden}});
  if (config.IsMoeLayer(layer)) {  // the experts have extents of their own
    const MoeConfig& moe = config.moe;
    tensors.push_back({names::kRouter, {moe.num_experts, hidden}});
    if (moe.shared_expert_ffn > 0) {
      const int64_t shared = moe.shared_expert_ffn;
      tensors.push_back({names::kSharedGate, {shared, hidden}});
      tensors.push_back({names::kSharedUp, {shared, hidden}});
      tensors.push_back({names::kSharedDown, {hidden, shared}});
      tensors.push_back({names::kSharedExpertGate, {1, hidden}});
    }
    return extent;
  }
  // OPT's MLP is up (fc1) → ReLU → down (fc2), with no gate.
  const bool gated = config.family == Family::kLlama;
  if (gated) tensors.push_back({names::kGate, {ffn, hidden}});
  tensors.push_back({names::kUp, {ffn, hidden}});
  tensors.push_back({names::kDown, {hidden, ffn}});
  if (config.mlp_bias) {
    if (gated) tensors.push_back({names::kGateBias, {ffn}});
    tensors.push_back({names::kUpBias, {ffn}});
    tensors.push_back({names::kDownBias, {hidden}});
  }
  return extent;
}

ExpectedExtent ExpertExtent(const ModelConfig& config, int layer, int expert) {
  const int64_t hidden = config.hidden_size;
  const int64_t ffn = config.moe.expert_ffn;
  return {
      ExtentName(ExtentKind::kExpert, layer, expert),
      ExtentKind::kExpert,
      layer,
      expert,
      {{names::kGate, {ffn, hidden}}, {names::kUp, {ffn, hidden}}, {names::kDown, {hidden, ffn}}}};
}

ExpectedExtent HeadExtent(const ModelConfig& config) {
  ExpectedExtent extent{ExtentName(ExtentKind::kHead, -1), ExtentKind::kHead, -1, -1, {}};
  extent.tensors.push_back({names::kFinalNorm, {config.hidden_size}});
  if (config.family == Family::kOpt) {
    extent.tensors.push_back({names::kFinalNormBias, {config.hidden_size}});
    if (config.has_embed_projection()) {
      extent.tensors.push_back({names::kProjectOut, {config.embed_dim(), config.hidden_size}});
    }
  }
  extent.tensors.push_back({names::kLmHead, {config.vocab_size, config.embed_dim()}});
  return extent;
}

}  // namespace

std::vector<ExpectedExtent> ExpectedExtents(const ModelConfig& config) {
  std::vector<ExpectedExtent> extents;
  extents.reserve(static_cast<size_t>(config.num_layers) + 2);
  extents.push_back(EmbeddingExtent(config));
  for (int layer = 0; layer < config.num_layers; ++layer) {
    extents.push_back(LayerExtent(config, layer));
    if (!config.IsMoeLayer(layer)) continue;
    for (int expert = 0; expert < config.moe.num_experts; ++expert) {
      extents.push_back(ExpertExtent(config, layer, expert));
    }
  }
  extents.push_back(HeadExtent(config));
  return extents;
}

}  // namespace zinf::formats
