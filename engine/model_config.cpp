// Consistency checks on model hyper-parameters.
#include "engine/model_config.h"

#include "engine/error.h"

namespace zinf {

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
  if (config.rope_scaling.factor <= 0) {
    Fail("model config: rope_scaling.factor must be positive, got {}", config.rope_scaling.factor);
  }
}

}  // namespace zinf
