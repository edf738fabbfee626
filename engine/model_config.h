// The hyper-parameters the forward pass needs, independent of any file format.
// model_formats/ fills it from a Hugging Face config.json or a zinf manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zinf {

enum class Family : uint8_t {
  kLlama,  // llama, mistral, qwen2, qwen3: RMSNorm, RoPE, gated SiLU MLP, GQA
  kOpt,    // opt: LayerNorm, learned positions (offset 2), ReLU MLP, biases everywhere
};

enum class RopeScalingType : uint8_t { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  // llama3 only:
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

// Mixture-of-experts feed-forward layers (Mixtral, Qwen2-MoE, Qwen3-MoE): a router picks
// experts_per_token of num_experts SwiGLU experts for each token. A dense model has num_experts 0.
struct MoeConfig {
  int num_experts = 0;
  int experts_per_token = 0;     // k
  int expert_ffn = 0;            // each expert's intermediate size
  bool normalize_top_k = false;  // rescale the k routing weights to sum to 1
  int shared_expert_ffn = 0;     // Qwen2-MoE's sigmoid-gated shared expert; 0: none
  // Qwen: layer L is sparse when L is not in dense_layers and (L + 1) % sparse_step == 0.
  int sparse_step = 1;
  std::vector<int> dense_layers;  // "mlp_only_layers": a dense FFN of intermediate_size
};

struct ModelConfig {
  std::string model_type;  // as in config.json: "llama", "mistral", "qwen2", "qwen3", "opt"
  Family family = Family::kLlama;
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int max_position_embeddings = 0;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool qkv_bias = false;  // llama "attention_bias", qwen2 always
  bool o_bias = false;    // llama "attention_bias"
  bool mlp_bias = false;  // llama "mlp_bias"
  bool qk_norm = false;   // qwen3: RMSNorm over each head of q and k before RoPE
  bool tie_word_embeddings = false;
  // OPT: embeddings of width word_embed_proj_dim, projected in/out when it differs from hidden_size.
  int word_embed_proj_dim = 0;
  int position_offset = 0;  // OPT stores positions shifted by 2
  int bos_token_id = -1;
  std::vector<int> eos_token_ids;
  MoeConfig moe;

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
  int embed_dim() const { return word_embed_proj_dim > 0 ? word_embed_proj_dim : hidden_size; }
  bool has_embed_projection() const { return embed_dim() != hidden_size; }
  bool is_moe() const { return moe.num_experts > 0; }
  // The layer's FFN is a mixture of experts (else the dense MLP of intermediate_size).
  bool IsMoeLayer(int layer) const;
  // The widest FFN activation any layer needs: dense, expert or shared expert.
  int max_ffn() const;
};

// Checks the hyper-parameters are consistent (head counts divide, sizes positive); throws zinf::Error.
void ValidateModelConfig(const ModelConfig& config);

}  // namespace zinf
