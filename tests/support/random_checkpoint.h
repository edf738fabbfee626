// Small random Hugging Face model directories (config.json + model.safetensors + tokenizer) for tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/dtype.h"

namespace zinf::testing {

// What WriteRandomHfCheckpoint writes. Shapes follow Hugging Face: matrices are [out, in].
struct RandomModelSpec {
  // llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe or opt
  std::string model_type = "llama";
  int vocab_size = 512;  // 512 matches the bundled stories260K tokenizer
  int hidden_size = 64;
  int intermediate_size = 96;  // OPT: ffn_dim
  int num_layers = 2;
  int num_heads = 4;
  int num_kv_heads = 2;  // OPT: ignored (always num_heads)
  int head_dim = 0;      // 0: hidden_size / num_heads, and not written to config.json
  int max_position_embeddings = 128;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  bool attention_bias = false;       // llama/mistral: q/k/v/o biases; qwen3: q/k/v/o biases
  bool mlp_bias = false;             // llama: gate/up/down biases
  bool tie_word_embeddings = false;  // true: no lm_head.weight is written
  int word_embed_proj_dim = 0;       // OPT: 0 means hidden_size (no project_in/out)
  DType dtype = DType::kF32;
  uint32_t seed = 1;
  bool with_tokenizer = true;  // copy the stories260K tokenizer files
  // Mixture of experts (mixtral, qwen2_moe, qwen3_moe). Mixtral's experts are intermediate_size
  // wide; Qwen's moe_intermediate_size, their dense layers (mlp_only_layers) intermediate_size.
  int num_experts = 0;
  int experts_per_token = 2;
  int moe_intermediate_size = 32;
  int shared_expert_intermediate_size = 0;  // qwen2_moe
  bool norm_topk_prob = false;
  std::vector<int> mlp_only_layers;
  float router_std = 0.5f;  // wide enough that routing probabilities are far from ties
};

// Llama with attention_bias (q/k/v/o biases), GQA 4 heads / 2 kv heads, untied lm_head.
RandomModelSpec LlamaWithBiasSpec();
// Qwen2: q/k/v biases (no o bias), GQA, untied lm_head.
RandomModelSpec Qwen2Spec();
// Qwen3: q/k RMSNorm per head, tied embeddings.
RandomModelSpec Qwen3Spec();
// Qwen2-MoE: 8 experts, top-2 without renormalisation, a sigmoid-gated shared expert, q/k/v
// biases, layer 1 dense (mlp_only_layers).
RandomModelSpec Qwen2MoeSpec();
// OPT: LayerNorm + biases everywhere, learned positions, word_embed_proj_dim 32 (project_in/out).
RandomModelSpec OptSpec();

// The config.json text the spec describes.
std::string RandomConfigJson(const RandomModelSpec& spec);

// Creates `dir` (and parents) and writes config.json, model.safetensors and, with_tokenizer,
// tokenizer.model + tokenizer_config.json + special_tokens_map.json. Deterministic in spec.seed.
void WriteRandomHfCheckpoint(const std::string& dir, const RandomModelSpec& spec);

// The bytes of `values` stored as `dtype`.
std::vector<std::byte> ToBytes(const std::vector<float>& values, DType dtype = DType::kF32);

// A fresh, empty directory under the system temporary directory, unique to this process and name;
// removed when the process exits unless ZINF_KEEP_TEST_DIRS is set.
std::string MakeTempDir(const std::string& name);

}  // namespace zinf::testing
