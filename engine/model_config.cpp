// Consistency checks on model hyper-parameters.
#include "engine/model_config.h"

#include <algorithm>

#include "engine/error.h"

namespace zinf {

bool ModelConfig::IsMoeLayer(int layer) const {
  if (!is_moe()) return false;
  for (int dense : moe.dense_layers) {
    if (dense == layer) return false;
  }
  return (layer + 1) % moe.sparse_step == 0;
}

int ModelConfig::max_ffn() const {
  int widest = is_moe() ? std::max(moe.expert_ffn, moe.shared_expert_ffn) : intermediate_size;
  for (int layer = 0; layer < num_layers && is_moe(); ++layer) {
    if (!IsMoeLayer(layer)) widest = std::max(widest, intermediate_size);
  }
  return widest;
}

namespace {

void ValidateMoe(const ModelConfig& config) {
  const MoeConfig& moe = config.moe;
  if (moe.num_experts < 0)
    Fail("model config: num_experts must be 0 or more, got {}", moe.num_experts);
  if (!config.is_moe()) return;
  if (config.family != Family::kLlama) Fail("model config: experts need a Llama-family model");
  if (moe.experts_per_token <= 0 || moe.experts_per_token > moe.num_experts) {
    Fail("model config: num_experts_per_tok ({}) must be between 1 and the number of experts ({})",
         moe.experts_per_token, moe.num_experts);
  }
  // Each expert is an extent of its own: bound their number before anything lays them out (the
  // largest real models have 512 a layer and ~12,000 in all).
  constexpr int kMaxExperts = 4096;
  constexpr int64_t kMaxExpertExtents = int64_t{1} << 20;
  if (moe.num_experts > kMaxExperts ||
      static_cast<int64_t>(moe.num_experts) * config.num_layers > kMaxExpertExtents) {
    Fail("model config: {} experts in each of {} layers is more than zinf supports ({} a layer, "
         "{} in all)",
         moe.num_experts, config.num_layers, kMaxExperts, kMaxExpertExtents);
  }
  if (moe.expert_ffn <= 0) {
    Fail("model config: the experts' intermediate size must be positive, got {}", moe.expert_ffn);
  }
  if (moe.shared_expert_ffn < 0) {
    Fail("model config: shared_expert_intermediate_size must be 0 or more, got {}",
         moe.shared_expert_ffn);
  }
  if (moe.sparse_step <= 0) {
    Fail("model config: decoder_sparse_step must be positive, got {}", moe.sparse_step);
  }
  for (int layer : moe.dense_layers) {
    if (layer < 0 || layer >= config.num_layers) {
      Fail("model config: mlp_only_layers names layer {}, but the model has {} layers", layer,
           config.num_layers);
    }
  }
}

}  // namespace

void ValidateModelConfig(const ModelConfig& config) {
  auto require_positive = [](int value, const char* name) {
    if (value <= 0) Fail("model config: {} must be positive, got {}", name, value);
  };
  require_positive(config.vocab_size, "vocab_size");
  require_positive(config.hidden_size, "hidden_size");
  require_positive(config.intermediate_size, "intermediate_size");
  require_positive(config.num_layers, "num_hidden_layers");
  require_positive(config.num_heads, "num_attention_heads");
  require_positive(config.num_kv_heads, "num_key_value_heads");
  require_positive(config.head_dim, "head_dim");
  require_positive(config.max_position_embeddings, "max_position_embeddings");
  if (config.num_heads % config.num_kv_heads != 0) {
    Fail("model config: num_attention_heads ({}) is not a multiple of num_key_value_heads ({})",
         config.num_heads, config.num_kv_heads);
  }
  if (config.family == Family::kLlama && config.head_dim % 2 != 0) {
    Fail("model config: head_dim ({}) must be even for rotary embeddings", config.head_dim);
  }
  ValidateMoe(config);
  if (config.rope_scaling.factor <= 0) {
    Fail("model config: rope_scaling.factor must be positive, got {}", config.rope_scaling.factor);
  }
}

}  // namespace zinf
