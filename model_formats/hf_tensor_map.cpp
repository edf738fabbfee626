// Hugging Face → zinf tensor names for the Llama family (with Mixtral's and Qwen-MoE's experts)
// and OPT, and the checked conversion plan.
#include "model_formats/hf_tensor_map.h"

#include <fmt/format.h>

#include <charconv>
#include <span>
#include <unordered_map>

#include "engine/error.h"
#include "engine/tensor_names.h"

namespace zinf::formats {

namespace {

namespace names = zinf::tensor_names;

struct NameRule {
  std::string_view hf;  // the HF name (outside layers) or the suffix after "layers.N."
  ExtentKind kind;
  const char* canonical;
};

// Llama, Mistral, Qwen2, Qwen3 (LlamaForCausalLM-style names).
constexpr NameRule kLlamaTopRules[] = {
    {"model.embed_tokens.weight", ExtentKind::kEmbedding, names::kTokenEmbed},
    {"model.norm.weight", ExtentKind::kHead, names::kFinalNorm},
    {"lm_head.weight", ExtentKind::kHead, names::kLmHead},
};
constexpr std::string_view kLlamaLayerPrefix = "model.layers.";
constexpr NameRule kLlamaLayerRules[] = {
    {"input_layernorm.weight", ExtentKind::kLayer, names::kAttnNorm},
    {"self_attn.q_proj.weight", ExtentKind::kLayer, names::kQ},
    {"self_attn.k_proj.weight", ExtentKind::kLayer, names::kK},
    {"self_attn.v_proj.weight", ExtentKind::kLayer, names::kV},
    {"self_attn.o_proj.weight", ExtentKind::kLayer, names::kO},
    {"self_attn.q_proj.bias", ExtentKind::kLayer, names::kQBias},
    {"self_attn.k_proj.bias", ExtentKind::kLayer, names::kKBias},
    {"self_attn.v_proj.bias", ExtentKind::kLayer, names::kVBias},
    {"self_attn.o_proj.bias", ExtentKind::kLayer, names::kOBias},
    {"self_attn.q_norm.weight", ExtentKind::kLayer, names::kQNorm},
    {"self_attn.k_norm.weight", ExtentKind::kLayer, names::kKNorm},
    {"post_attention_layernorm.weight", ExtentKind::kLayer, names::kFfnNorm},
    {"mlp.gate_proj.weight", ExtentKind::kLayer, names::kGate},
    {"mlp.up_proj.weight", ExtentKind::kLayer, names::kUp},
    {"mlp.down_proj.weight", ExtentKind::kLayer, names::kDown},
    {"mlp.gate_proj.bias", ExtentKind::kLayer, names::kGateBias},
    {"mlp.up_proj.bias", ExtentKind::kLayer, names::kUpBias},
    {"mlp.down_proj.bias", ExtentKind::kLayer, names::kDownBias},
    // Mixture-of-experts layers: the router, and Qwen2-MoE's shared expert.
    {"block_sparse_moe.gate.weight", ExtentKind::kLayer, names::kRouter},
    {"mlp.gate.weight", ExtentKind::kLayer, names::kRouter},
    {"mlp.shared_expert.gate_proj.weight", ExtentKind::kLayer, names::kSharedGate},
    {"mlp.shared_expert.up_proj.weight", ExtentKind::kLayer, names::kSharedUp},
    {"mlp.shared_expert.down_proj.weight", ExtentKind::kLayer, names::kSharedDown},
    {"mlp.shared_expert_gate.weight", ExtentKind::kLayer, names::kSharedExpertGate},
};

// "layers.N.<prefix>E.<suffix>": one expert's matrices, Mixtral's and Qwen-MoE's spellings.
struct ExpertNaming {
  std::string_view prefix;
  std::string_view gate, up, down;
};
constexpr ExpertNaming kExpertNamings[] = {
    {"block_sparse_moe.experts.", "w1.weight", "w3.weight", "w2.weight"},
    {"mlp.experts.", "gate_proj.weight", "up_proj.weight", "down_proj.weight"},
};

// OPT names after the "model.decoder." (or, in some checkpoints, "decoder.") prefix.
constexpr std::string_view kOptPrefixes[] = {"model.decoder.", "decoder."};
constexpr NameRule kOptTopRules[] = {
    {"embed_tokens.weight", ExtentKind::kEmbedding, names::kTokenEmbed},
    {"embed_positions.weight", ExtentKind::kEmbedding, names::kPositionEmbed},
    {"project_in.weight", ExtentKind::kEmbedding, names::kProjectIn},
    {"final_layer_norm.weight", ExtentKind::kHead, names::kFinalNorm},
    {"final_layer_norm.bias", ExtentKind::kHead, names::kFinalNormBias},
    {"project_out.weight", ExtentKind::kHead, names::kProjectOut},
};
constexpr std::string_view kOptLmHead = "lm_head.weight";
constexpr std::string_view kOptLayerPrefix = "layers.";
constexpr NameRule kOptLayerRules[] = {
    {"self_attn_layer_norm.weight", ExtentKind::kLayer, names::kAttnNorm},
    {"self_attn_layer_norm.bias", ExtentKind::kLayer, names::kAttnNormBias},
    {"self_attn.q_proj.weight", ExtentKind::kLayer, names::kQ},
    {"self_attn.k_proj.weight", ExtentKind::kLayer, names::kK},
    {"self_attn.v_proj.weight", ExtentKind::kLayer, names::kV},
    {"self_attn.out_proj.weight", ExtentKind::kLayer, names::kO},
    {"self_attn.q_proj.bias", ExtentKind::kLayer, names::kQBias},
    {"self_attn.k_proj.bias", ExtentKind::kLayer, names::kKBias},
    {"self_attn.v_proj.bias", ExtentKind::kLayer, names::kVBias},
    {"self_attn.out_proj.bias", ExtentKind::kLayer, names::kOBias},
    {"final_layer_norm.weight", ExtentKind::kLayer, names::kFfnNorm},
    {"final_layer_norm.bias", ExtentKind::kLayer, names::kFfnNormBias},
    {"fc1.weight", ExtentKind::kLayer, names::kUp},
    {"fc1.bias", ExtentKind::kLayer, names::kUpBias},
    {"fc2.weight", ExtentKind::kLayer, names::kDown},
    {"fc2.bias", ExtentKind::kLayer, names::kDownBias},
};

HfNameMapping Mapped(ExtentKind kind, int layer, const char* canonical, int expert = -1) {
  return {HfNameStatus::kMapped, {kind, layer, expert, canonical}};
}

const NameRule* FindRule(std::span<const NameRule> rules, std::string_view hf) {
  for (const NameRule& rule : rules) {
    if (rule.hf == hf) return &rule;
  }
  return nullptr;
}

// "12.self_attn..." → layer 12 and the rest after the dot; nullopt when not a layer number.
std::optional<std::pair<int, std::string_view>> SplitLayer(std::string_view rest) {
  size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  int layer = 0;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + dot, layer);
  if (error != std::errc() || end != rest.data() + dot || layer < 0) return std::nullopt;
  return std::make_pair(layer, rest.substr(dot + 1));
}

// "3.w1.weight" after an expert prefix → expert 3's canonical tensor.
std::optional<HfNameMapping> MapExpert(int layer, std::string_view in_layer) {
  for (const ExpertNaming& naming : kExpertNamings) {
    if (!in_layer.starts_with(naming.prefix)) continue;
    auto split = SplitLayer(in_layer.substr(naming.prefix.size()));  // same "N.rest" shape
    if (!split) return std::nullopt;
    const auto [expert, suffix] = *split;
    if (suffix == naming.gate) return Mapped(ExtentKind::kExpert, layer, names::kGate, expert);
    if (suffix == naming.up) return Mapped(ExtentKind::kExpert, layer, names::kUp, expert);
    if (suffix == naming.down) return Mapped(ExtentKind::kExpert, layer, names::kDown, expert);
  }
  return std::nullopt;
}

HfNameMapping MapWithRules(std::string_view name, std::span<const NameRule> top_rules,
                           std::string_view layer_prefix, std::span<const NameRule> layer_rules) {
  if (const NameRule* rule = FindRule(top_rules, name))
    return Mapped(rule->kind, -1, rule->canonical);
  if (name.starts_with(layer_prefix)) {
    if (auto split = SplitLayer(name.substr(layer_prefix.size()))) {
      if (const NameRule* rule = FindRule(layer_rules, split->second)) {
        return Mapped(ExtentKind::kLayer, split->first, rule->canonical);
      }
      if (std::optional<HfNameMapping> expert = MapExpert(split->first, split->second)) {
        return *expert;
      }
    }
  }
  return {};
}

// The HF name a canonical tensor comes from, for messages about missing tensors.
std::string HfNameFor(const ModelConfig& config, const ExpectedExtent& extent,
                      std::string_view canonical) {
  const Family family = config.family;
  bool opt = family == Family::kOpt;
  if (extent.kind == ExtentKind::kExpert) {
    const ExpertNaming& naming = kExpertNamings[config.model_type == "mixtral" ? 0 : 1];
    const std::string_view suffix = canonical == names::kGate ? naming.gate
                                    : canonical == names::kUp ? naming.up
                                                              : naming.down;
    return fmt::format("{}{}.{}{}.{}", kLlamaLayerPrefix, extent.layer, naming.prefix,
                       extent.expert, suffix);
  }
  if (canonical == names::kRouter) {  // two spellings: pick the model's
    return fmt::format("{}{}.{}.gate.weight", kLlamaLayerPrefix, extent.layer,
                       config.model_type == "mixtral" ? "block_sparse_moe" : "mlp");
  }
  std::span<const NameRule> rules =
      opt ? std::span<const NameRule>(kOptLayerRules) : std::span<const NameRule>(kLlamaLayerRules);
  if (extent.kind != ExtentKind::kLayer) {
    rules =
        opt ? std::span<const NameRule>(kOptTopRules) : std::span<const NameRule>(kLlamaTopRules);
  }
  if (canonical == names::kLmHead) return "lm_head.weight";
  for (const NameRule& rule : rules) {
    if (rule.canonical != canonical) continue;
    if (extent.kind == ExtentKind::kLayer) {
      return fmt::format("{}{}.{}", opt ? "model.decoder.layers." : kLlamaLayerPrefix, extent.layer,
                         rule.hf);
    }
    return fmt::format("{}{}", opt ? "model.decoder." : "", rule.hf);
  }
  return fmt::format("{}/{}", extent.name, canonical);
}

const char* FamilyName(Family family) { return family == Family::kOpt ? "OPT" : "Llama-family"; }

}  // namespace

HfNameMapping MapHfTensorName(Family family, std::string_view hf_name) {
  // Precomputed RoPE frequencies some checkpoints save as buffers; zinf computes its own.
  if (hf_name.ends_with("rotary_emb.inv_freq")) return {HfNameStatus::kIgnored, {}};
  if (family == Family::kLlama) {
    return MapWithRules(hf_name, kLlamaTopRules, kLlamaLayerPrefix, kLlamaLayerRules);
  }
  if (hf_name == kOptLmHead) return Mapped(ExtentKind::kHead, -1, names::kLmHead);
  for (std::string_view prefix : kOptPrefixes) {
    if (!hf_name.starts_with(prefix)) continue;
    return MapWithRules(hf_name.substr(prefix.size()), kOptTopRules, kOptLayerPrefix,
                        kOptLayerRules);
  }
  return {};
}

ConversionPlan PlanConversion(const ModelConfig& config, const SafetensorsCheckpoint& checkpoint) {
  ConversionPlan plan;
  std::unordered_map<std::string, size_t> extent_by_name;
  for (ExpectedExtent& layout : ExpectedExtents(config)) {
    size_t num_tensors = layout.tensors.size();
    extent_by_name[layout.name] = plan.extents.size();
    plan.extents.push_back({std::move(layout), std::vector<const SafetensorsTensor*>(num_tensors)});
  }
  const size_t head_idx = plan.extents.size() - 1;

  bool first = true;
  bool mixed_dtypes = false;
  for (const SafetensorsTensor* tensor : checkpoint.all()) {
    HfNameMapping mapping = MapHfTensorName(config.family, tensor->name);
    if (mapping.status == HfNameStatus::kIgnored) continue;
    if (mapping.status == HfNameStatus::kUnknown) {
      Fail("{}: tensor '{}' is not a {} weight zinf understands (tensors it does not understand "
           "are an error, not silently dropped)",
           tensor->file, tensor->name, FamilyName(config.family));
    }
    const HfTensorTarget& target = mapping.target;
    if (target.extent_kind == ExtentKind::kLayer && target.layer >= config.num_layers) {
      Fail("{}: tensor '{}' is for layer {}, but config.json says the model has {} layers",
           tensor->file, tensor->name, target.layer, config.num_layers);
    }
    if (target.extent_kind == ExtentKind::kExpert && !config.IsMoeLayer(target.layer)) {
      Fail("{}: tensor '{}' is an expert of layer {}, but config.json makes that layer a dense "
           "MLP (check model_type, num_experts, mlp_only_layers and decoder_sparse_step)",
           tensor->file, tensor->name, target.layer);
    }
    if (target.extent_kind == ExtentKind::kExpert && target.expert >= config.moe.num_experts) {
      Fail("{}: tensor '{}' is for expert {}, but config.json says each layer has {} experts",
           tensor->file, tensor->name, target.expert, config.moe.num_experts);
    }
    const auto found =
        extent_by_name.find(ExtentName(target.extent_kind, target.layer, target.expert));
    ZINF_CHECK(found != extent_by_name.end(), "no extent for {}", tensor->name);
    PlannedExtent& extent = plan.extents[found->second];
    size_t slot = 0;
    while (slot < extent.layout.tensors.size() && extent.layout.tensors[slot].name != target.name) {
      ++slot;
    }
    if (slot == extent.layout.tensors.size()) {
      Fail("{}: tensor '{}' ({}/{}) is present, but config.json says this model has no such tensor "
           "(check attention_bias, mlp_bias, word_embed_proj_dim, model_type and, for experts, "
           "mlp_only_layers)",
           tensor->file, tensor->name, extent.layout.name, target.name);
    }
    if (const SafetensorsTensor* earlier = extent.sources[slot]) {
      Fail("tensors '{}' ({}) and '{}' ({}) are both {}/{}", earlier->name, earlier->file,
           tensor->name, tensor->file, extent.layout.name, target.name);
    }
    const std::vector<int64_t>& expected_shape = extent.layout.tensors[slot].shape;
    if (tensor->shape != expected_shape) {
      Fail("{}: tensor '{}' has shape {}, but config.json implies {}", tensor->file, tensor->name,
           ShapeString(tensor->shape), ShapeString(expected_shape));
    }
    extent.sources[slot] = tensor;
    if (first) plan.source_dtype = tensor->dtype;
    mixed_dtypes = mixed_dtypes || (!first && plan.source_dtype != tensor->dtype);
    first = false;
  }
  if (mixed_dtypes) plan.source_dtype = std::nullopt;

  // Tied embeddings: the head gets its own copy of the token embedding, so it streams in one read.
  PlannedExtent& head = plan.extents[head_idx];
  const size_t lm_head_slot = head.layout.tensors.size() - 1;  // ExpectedExtents puts it last
  if (head.sources[lm_head_slot] == nullptr && config.tie_word_embeddings) {
    head.sources[lm_head_slot] = plan.extents[0].sources[0];  // token_embed, first in "embed"
    plan.lm_head_copied_from_embedding = head.sources[lm_head_slot] != nullptr;
  }

  const bool lm_head_missing = head.sources[lm_head_slot] == nullptr;
  std::vector<std::string> missing;
  for (const PlannedExtent& extent : plan.extents) {
    for (size_t slot = 0; slot < extent.sources.size(); ++slot) {
      if (extent.sources[slot] != nullptr) continue;
      missing.push_back(HfNameFor(config, extent.layout, extent.layout.tensors[slot].name));
    }
  }
  if (!missing.empty()) {
    constexpr size_t kMaxNamed = 8;  // enough to see the pattern without flooding the terminal
    size_t more = missing.size() > kMaxNamed ? missing.size() - kMaxNamed : 0;
    if (more > 0) missing.resize(kMaxNamed);
    Fail("the checkpoint lacks {} tensor(s) config.json calls for: {}{}{}", missing.size() + more,
         fmt::join(missing, ", "), more > 0 ? fmt::format(" and {} more", more) : "",
         lm_head_missing ? " (lm_head.weight is required: tie_word_embeddings is false)" : "");
  }
  return plan;
}

}  // namespace zinf::formats
