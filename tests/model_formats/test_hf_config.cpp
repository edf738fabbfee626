// Hugging Face config.json parsing: stories260K, each supported model_type, rope scaling, errors.
#include <catch2/catch.hpp>

#include "engine/error.h"
#include "model_formats/hf_config.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {
namespace {

using Catch::Matchers::Contains;

std::string ErrorOf(const std::string& json) {
  try {
    ParseHfConfig(json, "test/config.json");
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("no error for " << json);
  return "";
}

constexpr const char* kQwen2 = R"({
  "model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864,
  "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
  "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "hidden_act": "silu", "tie_word_embeddings": true, "bos_token_id": 151643,
  "eos_token_id": 151643, "sliding_window": 32768, "use_sliding_window": false})";

}  // namespace

TEST_CASE("stories260K config.json", "[hf_config]") {
  const ModelConfig config =
      LoadHfConfig(std::string(ZINF_SOURCE_DIR) + "/models/stories260K/config.json");
  CHECK(config.model_type == "llama");
  CHECK(config.family == Family::kLlama);
  CHECK(config.vocab_size == 512);
  CHECK(config.hidden_size == 64);
  CHECK(config.intermediate_size == 172);
  CHECK(config.num_layers == 5);
  CHECK(config.num_heads == 8);
  CHECK(config.num_kv_heads == 4);
  CHECK(config.head_dim == 8);
  CHECK(config.max_position_embeddings == 512);
  CHECK(config.norm_eps == Approx(1e-5));
  CHECK(config.rope_theta == 10000.0);
  CHECK(config.rope_scaling.type == RopeScalingType::kNone);
  CHECK_FALSE(config.qkv_bias);
  CHECK_FALSE(config.o_bias);
  CHECK_FALSE(config.mlp_bias);
  CHECK_FALSE(config.qk_norm);
  CHECK(config.tie_word_embeddings);
  CHECK(config.bos_token_id == 1);
  CHECK(config.eos_token_ids == std::vector<int>{2});
  CHECK(config.position_offset == 0);
  CHECK_FALSE(config.has_embed_projection());
}

TEST_CASE("qwen2: q/k/v biases, no o bias, default head_dim", "[hf_config]") {
  const ModelConfig config = ParseHfConfig(kQwen2, "qwen2.json");
  CHECK(config.family == Family::kLlama);
  CHECK(config.qkv_bias);
  CHECK_FALSE(config.o_bias);
  CHECK_FALSE(config.qk_norm);
  CHECK(config.head_dim == 64);
  CHECK(config.num_kv_heads == 2);
  CHECK(config.rope_theta == 1000000.0);
  CHECK(config.norm_eps == Approx(1e-6));
  CHECK(config.tie_word_embeddings);
  CHECK(config.eos_token_ids == std::vector<int>{151643});
}

TEST_CASE("qwen3: qk_norm, explicit head_dim, eos list", "[hf_config]") {
  const ModelConfig config = ParseHfConfig(R"({
    "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
    "attention_bias": false, "hidden_act": "silu", "tie_word_embeddings": true,
    "rope_scaling": null, "bos_token_id": 151643, "eos_token_id": [151645, 151643]})",
                                           "qwen3.json");
  CHECK(config.qk_norm);
  CHECK_FALSE(config.qkv_bias);
  CHECK(config.head_dim == 128);
  CHECK(config.q_dim() == 2048);
  CHECK(config.kv_dim() == 1024);
  CHECK(config.rope_theta == 1000000.0);
  CHECK(config.eos_token_ids == std::vector<int>{151645, 151643});
}

TEST_CASE("mistral: GQA, untied by default, sliding_window ignored", "[hf_config]") {
  const ModelConfig config = ParseHfConfig(R"({
    "model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
    "sliding_window": 4096, "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2})",
                                           "mistral.json");
  CHECK(config.model_type == "mistral");
  CHECK(config.num_kv_heads == 8);
  CHECK(config.head_dim == 128);
  CHECK_FALSE(config.tie_word_embeddings);
  CHECK_FALSE(config.qkv_bias);
}

TEST_CASE("llama with attention_bias and llama3 rope scaling", "[hf_config]") {
  const ModelConfig config = ParseHfConfig(R"({
    "model_type": "llama", "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "attention_bias": true, "mlp_bias": true, "tie_word_embeddings": true,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]})",
                                           "llama3.json");
  CHECK(config.qkv_bias);
  CHECK(config.o_bias);
  CHECK(config.mlp_bias);
  CHECK(config.rope_scaling.type == RopeScalingType::kLlama3);
  CHECK(config.rope_scaling.factor == 32.0);
  CHECK(config.rope_scaling.low_freq_factor == 1.0);
  CHECK(config.rope_scaling.high_freq_factor == 4.0);
  CHECK(config.rope_scaling.original_max_position_embeddings == 8192);
  CHECK(config.eos_token_ids.size() == 3);

  const ModelConfig linear = ParseHfConfig(
      R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
          "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 64,
          "rope_scaling": {"type": "linear", "factor": 2.0}})",
      "linear.json");
  CHECK(linear.rope_scaling.type == RopeScalingType::kLinear);
  CHECK(linear.rope_scaling.factor == 2.0);
  CHECK(linear.num_kv_heads == 2);  // defaults to num_attention_heads
}

TEST_CASE("opt: LayerNorm family, learned positions, projections", "[hf_config]") {
  const ModelConfig config = ParseHfConfig(R"({
    "model_type": "opt", "vocab_size": 50272, "hidden_size": 768, "ffn_dim": 3072,
    "num_hidden_layers": 12, "num_attention_heads": 12, "max_position_embeddings": 2048,
    "word_embed_proj_dim": 768, "do_layer_norm_before": true, "activation_function": "relu",
    "enable_bias": true, "bos_token_id": 2, "eos_token_id": 2})",
                                           "opt.json");
  CHECK(config.family == Family::kOpt);
  CHECK(config.intermediate_size == 3072);
  CHECK(config.num_kv_heads == 12);
  CHECK(config.head_dim == 64);
  CHECK(config.position_offset == 2);
  CHECK(config.qkv_bias);
  CHECK(config.o_bias);
  CHECK(config.mlp_bias);
  CHECK(config.tie_word_embeddings);
  CHECK(config.norm_eps == Approx(1e-5));
  CHECK_FALSE(config.has_embed_projection());

  const ModelConfig random_opt = ParseHfConfig(testing::RandomConfigJson(testing::OptSpec()), "r");
  CHECK(random_opt.embed_dim() == 32);
  CHECK(random_opt.has_embed_projection());
  CHECK(random_opt.intermediate_size == 128);
}

TEST_CASE("hf_config errors name the file and the field", "[hf_config]") {
  CHECK_THAT(ErrorOf(R"({"model_type": "gpt2"})"),
             Contains("test/config.json") && Contains("'gpt2'") && Contains("llama, mistral"));
  CHECK_THAT(ErrorOf(R"({"model_type": "llama",)"),
             Contains("test/config.json") && Contains("malformed JSON at byte"));
  CHECK_THAT(ErrorOf(R"({"model_type": "llama", "vocab_size": "512"})"),
             Contains("test/config.json") && Contains("'vocab_size'") && Contains("integer"));
  CHECK_THAT(ErrorOf(R"({"model_type": "llama", "vocab_size": 512})"),
             Contains("'hidden_size'") && Contains("missing"));

  std::string text = kQwen2;
  text.insert(text.size() - 1, R"(, "rope_scaling": {"type": "yarn", "factor": 4.0})");
  CHECK_THAT(ErrorOf(text), Contains("test/config.json") && Contains("'yarn'"));
  text = kQwen2;
  text.insert(text.size() - 1, R"(, "hidden_act": "gelu")");
  CHECK_THAT(ErrorOf(text), Contains("hidden_act") && Contains("gelu"));
  text = kQwen2;
  text.insert(text.size() - 1, R"(, "rms_norm_eps": "small")");
  CHECK_THAT(ErrorOf(text), Contains("'rms_norm_eps'") && Contains("number"));

  const std::string opt = R"({"model_type": "opt", "vocab_size": 50272, "hidden_size": 1024,
    "ffn_dim": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
    "max_position_embeddings": 2048, "word_embed_proj_dim": 512, "do_layer_norm_before": false})";
  CHECK_THAT(ErrorOf(opt), Contains("do_layer_norm_before") && Contains("not supported"));
  CHECK_THROWS_WITH(LoadHfConfig("/nonexistent/config.json"), Contains("/nonexistent/config.json"));
  // ValidateModelConfig's checks surface with the file name in front.
  CHECK_THAT(ErrorOf(R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 16,
      "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
      "num_key_value_heads": 3, "max_position_embeddings": 64})"),
             Contains("test/config.json") && Contains("num_key_value_heads"));
}

}  // namespace zinf::formats
