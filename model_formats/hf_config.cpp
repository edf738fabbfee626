// Hugging Face config.json → ModelConfig, for the Llama family and OPT, with every field type-checked.
#include "model_formats/hf_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "engine/error.h"
#include "model_formats/json_depth.h"

namespace zinf::formats {
namespace {

using nlohmann::json;

constexpr const char* kSupportedTypes =
    "llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, opt";

// Typed access to one JSON object's fields; errors name the source file and the field.
// A field set to null counts as absent, as transformers treats it.
class Fields {
 public:
  Fields(const json& object, std::string source, std::string prefix = "")
      : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {}

  bool has(const char* field) const { return object_.contains(field) && !object_[field].is_null(); }

  [[noreturn]] void FailField(const char* field, const std::string& what) const {
    Fail("config {}: field '{}{}' {}", source_, prefix_, field, what);
  }

  int Int(const char* field) const {
    if (!has(field)) FailField(field, "is missing");
    const json& value = object_[field];
    if (!value.is_number_integer())
      FailField(field, fmt::format("must be an integer, got {}", value.dump()));
    const bool too_big = value.is_number_unsigned() && value.get<uint64_t>() > INT32_MAX;
    if (too_big || value.get<int64_t>() < INT32_MIN || value.get<int64_t>() > INT32_MAX) {
      FailField(field, fmt::format("is out of range: {}", value.dump()));
    }
    return value.get<int>();
  }
  int Int(const char* field, int fallback) const { return has(field) ? Int(field) : fallback; }

  double Double(const char* field) const {
    if (!has(field)) FailField(field, "is missing");
    const json& value = object_[field];
    if (!value.is_number()) FailField(field, fmt::format("must be a number, got {}", value.dump()));
    return value.get<double>();
  }
  double Double(const char* field, double fallback) const {
    return has(field) ? Double(field) : fallback;
  }

  bool Bool(const char* field, bool fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_[field];
    if (!value.is_boolean())
      FailField(field, fmt::format("must be true or false, got {}", value.dump()));
    return value.get<bool>();
  }

  std::string String(const char* field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    const json& value = object_[field];
    if (!value.is_string()) FailField(field, fmt::format("must be a string, got {}", value.dump()));
    return value.get<std::string>();
  }

  // An integer or a list of integers (eos_token_id); empty when absent.
  std::vector<int> IntList(const char* field) const {
    if (!has(field)) return {};
    const json& value = object_[field];
    if (value.is_number_integer()) return {Int(field)};
    if (!value.is_array()) {
      FailField(field,
                fmt::format("must be an integer or a list of integers, got {}", value.dump()));
    }
    std::vector<int> list;
    for (const json& item : value) {
      if (!item.is_number_integer() || item.get<int64_t>() < 0 || item.get<int64_t>() > INT32_MAX) {
        FailField(field,
                  fmt::format("must be a list of non-negative integers, got {}", value.dump()));
      }
      list.push_back(item.get<int>());
    }
    return list;
  }

  const json& object() const { return object_; }

 private:
  const json& object_;
  std::string source_;
  std::string prefix_;
};

RopeScaling ParseRopeScaling(const Fields& config, const std::string& source) {
  RopeScaling scaling;
  if (!config.has("rope_scaling")) return scaling;
  const json& object = config.object()["rope_scaling"];
  if (!object.is_object()) config.FailField("rope_scaling", "must be an object or null");
  const Fields fields(object, source, "rope_scaling.");
  // transformers renamed "type" to "rope_type"; configs carry either.
  const std::string type =
      fields.has("rope_type") ? fields.String("rope_type", "") : fields.String("type", "default");
  if (type == "default") return scaling;
  if (type == "linear") {
    scaling.type = RopeScalingType::kLinear;
    scaling.factor = fields.Double("factor");
  } else if (type == "llama3") {
    scaling.type = RopeScalingType::kLlama3;
    scaling.factor = fields.Double("factor");
    scaling.low_freq_factor = fields.Double("low_freq_factor");
    scaling.high_freq_factor = fields.Double("high_freq_factor");
    scaling.original_max_position_embeddings = fields.Int("original_max_position_embeddings");
  } else {
    Fail("config {}: rope_scaling type '{}' is not supported (supported: default, linear, llama3)",
         source, type);
  }
  return scaling;
}

// Mixtral's block_sparse_moe, or Qwen2-MoE's / Qwen3-MoE's sparse mlp.
void ParseExperts(const Fields& fields, ModelConfig& config) {
  MoeConfig& moe = config.moe;
  moe.experts_per_token = fields.Int("num_experts_per_tok");
  if (config.model_type == "mixtral") {
    moe.num_experts = fields.Int("num_local_experts");
    moe.expert_ffn = config.intermediate_size;  // every layer is sparse, its experts this wide
    moe.normalize_top_k = true;                 // MixtralSparseMoeBlock always renormalises
    return;
  }
  moe.num_experts = fields.Int("num_experts");
  if (moe.num_experts <= 0) fields.FailField("num_experts", "must be positive");
  moe.expert_ffn = fields.Int("moe_intermediate_size");
  moe.normalize_top_k = fields.Bool("norm_topk_prob", false);
  moe.sparse_step = fields.Int("decoder_sparse_step", 1);
  moe.dense_layers = fields.IntList("mlp_only_layers");
  if (config.model_type == "qwen2_moe") {
    moe.shared_expert_ffn = fields.Int("shared_expert_intermediate_size");
  }
}

void ParseLlamaFamily(const Fields& fields, const std::string& source, ModelConfig& config) {
  const std::string act = fields.String("hidden_act", "silu");
  if (act != "silu") {
    Fail("config {}: hidden_act '{}' is not supported for {} (only silu)", source, act,
         config.model_type);
  }
  config.intermediate_size = fields.Int("intermediate_size");
  config.num_kv_heads = fields.Int("num_key_value_heads", config.num_heads);
  config.norm_eps = fields.Double("rms_norm_eps", 1e-6);
  config.rope_theta = fields.Double("rope_theta", 10000.0);
  config.rope_scaling = ParseRopeScaling(fields, source);
  config.tie_word_embeddings = fields.Bool("tie_word_embeddings", false);
  config.mlp_bias = fields.Bool("mlp_bias", false);
  const bool attention_bias = fields.Bool("attention_bias", false);
  if (config.model_type == "qwen2" || config.model_type == "qwen2_moe") {
    // Qwen2 and Qwen2-MoE always have q/k/v biases and never an o_proj bias, whatever
    // attention_bias says.
    config.qkv_bias = true;
    config.o_bias = false;
  } else {
    config.qkv_bias = attention_bias;
    config.o_bias = attention_bias;
  }
  config.qk_norm = config.model_type == "qwen3" || config.model_type == "qwen3_moe";
  if (config.model_type == "mixtral" || config.model_type.ends_with("_moe")) {
    ParseExperts(fields, config);
  }
  // Mistral's sliding_window is ignored: sliding window attention is not implemented, so
  // contexts longer than the window differ from the reference. Read it only to type-check it.
  (void)fields.Int("sliding_window", 0);
  const bool llama_defaults = config.model_type == "llama" || config.model_type == "mistral" ||
                              config.model_type == "mixtral";
  config.bos_token_id = fields.Int("bos_token_id", llama_defaults ? 1 : -1);
  config.eos_token_ids = fields.IntList("eos_token_id");
  if (config.eos_token_ids.empty() && llama_defaults && !fields.object().contains("eos_token_id")) {
    config.eos_token_ids = {2};  // LlamaConfig's and MistralConfig's default
  }
}

void ParseOpt(const Fields& fields, const std::string& source, ModelConfig& config) {
  config.family = Family::kOpt;
  const std::string act = fields.String("activation_function", "relu");
  if (act != "relu") {
    Fail("config {}: activation_function '{}' is not supported for opt (only relu)", source, act);
  }
  if (!fields.Bool("do_layer_norm_before", true)) {
    Fail("config {}: do_layer_norm_before=false (post-LayerNorm OPT, e.g. opt-350m) is not "
         "supported",
         source);
  }
  config.intermediate_size = fields.Int("ffn_dim");
  config.num_kv_heads = config.num_heads;
  config.norm_eps = 1e-5;  // nn.LayerNorm's default; OPT configs do not store it
  config.tie_word_embeddings = fields.Bool("tie_word_embeddings", true);
  config.word_embed_proj_dim = fields.Int("word_embed_proj_dim", config.hidden_size);
  config.position_offset = 2;  // OPTLearnedPositionalEmbedding shifts positions by 2
  const bool bias = fields.Bool("enable_bias", true);
  config.qkv_bias = config.o_bias = config.mlp_bias = bias;
  config.bos_token_id = fields.Int("bos_token_id", 2);  // OPTConfig's defaults
  config.eos_token_ids = fields.IntList("eos_token_id");
  if (config.eos_token_ids.empty() && !fields.object().contains("eos_token_id")) {
    config.eos_token_ids = {2};
  }
}

}  // namespace

ModelConfig ParseHfConfig(const std::string& json_text, const std::string& source_name) {
  if (const std::optional<uint64_t> offset = FindJsonNestingOver(json_text)) {
    Fail("config {}: JSON nested deeper than {} levels at byte {}", source_name, kMaxJsonDepth,
         *offset);
  }
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& error) {
    Fail("config {}: malformed JSON at byte {}: {}", source_name, error.byte, error.what());
  } catch (const json::exception& error) {  // e.g. a number too large for a double
    Fail("config {}: malformed JSON: {}", source_name, error.what());
  }
  if (!root.is_object()) Fail("config {}: not a JSON object", source_name);
  const Fields fields(root, source_name);

  ModelConfig config;
  if (!fields.has("model_type")) {
    Fail("config {}: field 'model_type' is missing (supported: {})", source_name, kSupportedTypes);
  }
  config.model_type = fields.String("model_type", "");
  const bool llama_family = config.model_type == "llama" || config.model_type == "mistral" ||
                            config.model_type == "qwen2" || config.model_type == "qwen3" ||
                            config.model_type == "mixtral" || config.model_type == "qwen2_moe" ||
                            config.model_type == "qwen3_moe";
  if (!llama_family && config.model_type != "opt") {
    Fail("config {}: model_type '{}' is not supported (supported: {})", source_name,
         config.model_type, kSupportedTypes);
  }
  config.vocab_size = fields.Int("vocab_size");
  config.hidden_size = fields.Int("hidden_size");
  config.num_layers = fields.Int("num_hidden_layers");
  config.num_heads = fields.Int("num_attention_heads");
  config.max_position_embeddings = fields.Int("max_position_embeddings");
  if (config.num_heads <= 0) fields.FailField("num_attention_heads", "must be positive");
  if (!fields.has("head_dim") && config.hidden_size % config.num_heads != 0) {
    Fail("config {}: hidden_size ({}) is not a multiple of num_attention_heads ({})", source_name,
         config.hidden_size, config.num_heads);
  }
  config.head_dim = fields.Int("head_dim", config.hidden_size / config.num_heads);

  if (llama_family) {
    ParseLlamaFamily(fields, source_name, config);
  } else {
    ParseOpt(fields, source_name, config);
  }
  try {
    ValidateModelConfig(config);
  } catch (const std::exception& error) {
    Rethrow(error, "config " + source_name);
  }
  return config;
}

ModelConfig LoadHfConfig(const std::string& config_json_path) {
  std::ifstream in(config_json_path, std::ios::binary);
  if (!in)
    Fail("config {}: cannot open (is this a Hugging Face model directory?)", config_json_path);
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) Fail("config {}: read error", config_json_path);
  return ParseHfConfig(text.str(), config_json_path);
}

}  // namespace zinf::formats
