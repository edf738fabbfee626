// Writes small, deterministic random Hugging Face checkpoints (Llama family and OPT) for tests.
#include "tests/support/random_checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/error.h"
#include "model_formats/safetensors.h"

namespace zinf::testing {
namespace {

namespace fs = std::filesystem;
using formats::TensorToWrite;

// Scales chosen so a 64-wide random model gives logits spread over a few units: not all equal
// (degenerate argmax) and not saturated.
constexpr float kEmbedStd = 0.1f;
constexpr float kMatrixStd = 0.08f;
constexpr float kBiasStd = 0.02f;
constexpr float kNormStd = 0.05f;  // norm weights are 1 + N(0, kNormStd)

const char* TorchDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kI8:
    case DType::kQ4: break;  // random checkpoints stand for Hugging Face files: float only
  }
  return "?";
}

class TensorMaker {
 public:
  explicit TensorMaker(const RandomModelSpec& spec) : dtype_(spec.dtype), rng_(spec.seed) {}

  // mean + N(0, std) values of the given shape.
  void Add(const std::string& name, std::vector<int64_t> shape, float std, float mean = 0.0f) {
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    std::normal_distribution<float> normal(mean, std);
    std::vector<float> values(static_cast<size_t>(count));
    for (float& value : values) value = normal(rng_);
    tensors_.push_back({name, dtype_, std::move(shape), ToBytes(values, dtype_)});
  }
  void Matrix(const std::string& name, int64_t out, int64_t in) {
    Add(name, {out, in}, kMatrixStd);
  }
  void Bias(const std::string& name, int64_t size) { Add(name, {size}, kBiasStd); }
  void Norm(const std::string& name, int64_t size) { Add(name, {size}, kNormStd, 1.0f); }

  const std::vector<TensorToWrite>& tensors() const { return tensors_; }

 private:
  DType dtype_;
  std::mt19937 rng_;
  std::vector<TensorToWrite> tensors_;
};

bool IsSparse(const RandomModelSpec& spec, int layer) {
  return spec.num_experts > 0 && std::find(spec.mlp_only_layers.begin(), spec.mlp_only_layers.end(),
                                           layer) == spec.mlp_only_layers.end();
}

// A sparse layer's router, experts and (qwen2_moe) shared expert, in Hugging Face's names.
void AddExperts(const RandomModelSpec& spec, const std::string& prefix, TensorMaker& maker) {
  const int64_t hidden = spec.hidden_size;
  const bool mixtral = spec.model_type == "mixtral";
  const int64_t ffn = mixtral ? spec.intermediate_size : spec.moe_intermediate_size;
  const std::string block = prefix + (mixtral ? "block_sparse_moe." : "mlp.");
  maker.Add(block + "gate.weight", {spec.num_experts, hidden}, spec.router_std);
  for (int e = 0; e < spec.num_experts; ++e) {
    const std::string expert = block + "experts." + std::to_string(e) + ".";
    maker.Matrix(expert + (mixtral ? "w1.weight" : "gate_proj.weight"), ffn, hidden);
    maker.Matrix(expert + (mixtral ? "w3.weight" : "up_proj.weight"), ffn, hidden);
    maker.Matrix(expert + (mixtral ? "w2.weight" : "down_proj.weight"), hidden, ffn);
  }
  if (spec.shared_expert_intermediate_size > 0) {
    const int64_t shared = spec.shared_expert_intermediate_size;
    maker.Matrix(block + "shared_expert.gate_proj.weight", shared, hidden);
    maker.Matrix(block + "shared_expert.up_proj.weight", shared, hidden);
    maker.Matrix(block + "shared_expert.down_proj.weight", hidden, shared);
    maker.Add(block + "shared_expert_gate.weight", {1, hidden}, spec.router_std);
  }
}

std::vector<TensorToWrite> LlamaTensors(const RandomModelSpec& spec) {
  TensorMaker maker(spec);
  const int64_t hidden = spec.hidden_size;
  const int64_t head_dim = spec.head_dim > 0 ? spec.head_dim : hidden / spec.num_heads;
  const int64_t q_dim = spec.num_heads * head_dim;
  const int64_t kv_dim = spec.num_kv_heads * head_dim;
  const int64_t ffn = spec.intermediate_size;
  const bool qwen2 = spec.model_type == "qwen2" || spec.model_type == "qwen2_moe";
  const bool qkv_bias = qwen2 || spec.attention_bias;
  const bool o_bias = !qwen2 && spec.attention_bias;
  maker.Add("model.embed_tokens.weight", {spec.vocab_size, hidden}, kEmbedStd);
  for (int layer = 0; layer < spec.num_layers; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    maker.Norm(prefix + "input_layernorm.weight", hidden);
    maker.Matrix(prefix + "self_attn.q_proj.weight", q_dim, hidden);
    maker.Matrix(prefix + "self_attn.k_proj.weight", kv_dim, hidden);
    maker.Matrix(prefix + "self_attn.v_proj.weight", kv_dim, hidden);
    maker.Matrix(prefix + "self_attn.o_proj.weight", hidden, q_dim);
    if (qkv_bias) {
      maker.Bias(prefix + "self_attn.q_proj.bias", q_dim);
      maker.Bias(prefix + "self_attn.k_proj.bias", kv_dim);
      maker.Bias(prefix + "self_attn.v_proj.bias", kv_dim);
    }
    if (o_bias) maker.Bias(prefix + "self_attn.o_proj.bias", hidden);
    if (spec.model_type == "qwen3" || spec.model_type == "qwen3_moe") {
      maker.Norm(prefix + "self_attn.q_norm.weight", head_dim);
      maker.Norm(prefix + "self_attn.k_norm.weight", head_dim);
    }
    maker.Norm(prefix + "post_attention_layernorm.weight", hidden);
    if (IsSparse(spec, layer)) {
      AddExperts(spec, prefix, maker);
      continue;
    }
    maker.Matrix(prefix + "mlp.gate_proj.weight", ffn, hidden);
    maker.Matrix(prefix + "mlp.up_proj.weight", ffn, hidden);
    maker.Matrix(prefix + "mlp.down_proj.weight", hidden, ffn);
    if (spec.mlp_bias) {
      maker.Bias(prefix + "mlp.gate_proj.bias", ffn);
      maker.Bias(prefix + "mlp.up_proj.bias", ffn);
      maker.Bias(prefix + "mlp.down_proj.bias", hidden);
    }
  }
  maker.Norm("model.norm.weight", hidden);
  if (!spec.tie_word_embeddings) maker.Add("lm_head.weight", {spec.vocab_size, hidden}, kEmbedStd);
  return maker.tensors();
}

std::vector<TensorToWrite> OptTensors(const RandomModelSpec& spec) {
  TensorMaker maker(spec);
  const int64_t hidden = spec.hidden_size;
  const int64_t proj = spec.word_embed_proj_dim > 0 ? spec.word_embed_proj_dim : hidden;
  const int64_t ffn = spec.intermediate_size;
  const std::string decoder = "model.decoder.";
  maker.Add(decoder + "embed_tokens.weight", {spec.vocab_size, proj}, kEmbedStd);
  // OPT's learned positions are stored shifted by 2.
  maker.Add(decoder + "embed_positions.weight", {spec.max_position_embeddings + 2, hidden},
            kEmbedStd);
  if (proj != hidden) {
    maker.Matrix(decoder + "project_in.weight", hidden, proj);
    maker.Matrix(decoder + "project_out.weight", proj, hidden);
  }
  for (int layer = 0; layer < spec.num_layers; ++layer) {
    const std::string prefix = decoder + "layers." + std::to_string(layer) + ".";
    maker.Norm(prefix + "self_attn_layer_norm.weight", hidden);
    maker.Bias(prefix + "self_attn_layer_norm.bias", hidden);
    for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      maker.Matrix(prefix + "self_attn." + name + ".weight", hidden, hidden);
      maker.Bias(prefix + "self_attn." + name + ".bias", hidden);
    }
    maker.Norm(prefix + "final_layer_norm.weight", hidden);
    maker.Bias(prefix + "final_layer_norm.bias", hidden);
    maker.Matrix(prefix + "fc1.weight", ffn, hidden);
    maker.Bias(prefix + "fc1.bias", ffn);
    maker.Matrix(prefix + "fc2.weight", hidden, ffn);
    maker.Bias(prefix + "fc2.bias", hidden);
  }
  maker.Norm(decoder + "final_layer_norm.weight", hidden);
  maker.Bias(decoder + "final_layer_norm.bias", hidden);
  // Tied: OPT safetensors omit lm_head.weight.
  if (!spec.tie_word_embeddings) maker.Add("lm_head.weight", {spec.vocab_size, proj}, kEmbedStd);
  return maker.tensors();
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) Fail("cannot write '{}'", path.string());
}

}  // namespace

RandomModelSpec LlamaWithBiasSpec() {
  RandomModelSpec spec;
  spec.attention_bias = true;
  return spec;
}

RandomModelSpec Qwen2Spec() {
  RandomModelSpec spec;
  spec.model_type = "qwen2";
  spec.norm_eps = 1e-6;
  return spec;
}

RandomModelSpec Qwen3Spec() {
  RandomModelSpec spec;
  spec.model_type = "qwen3";
  spec.norm_eps = 1e-6;
  spec.head_dim = 16;
  spec.tie_word_embeddings = true;
  return spec;
}

RandomModelSpec Qwen2MoeSpec() {
  RandomModelSpec spec;
  spec.model_type = "qwen2_moe";
  spec.norm_eps = 1e-6;
  spec.num_layers = 3;
  spec.num_experts = 8;
  spec.experts_per_token = 2;
  spec.moe_intermediate_size = 32;
  spec.shared_expert_intermediate_size = 80;
  spec.mlp_only_layers = {1};
  return spec;
}

RandomModelSpec OptSpec() {
  RandomModelSpec spec;
  spec.model_type = "opt";
  spec.intermediate_size = 128;
  spec.num_kv_heads = 4;
  spec.word_embed_proj_dim = 32;
  spec.tie_word_embeddings = true;
  return spec;
}

std::string RandomConfigJson(const RandomModelSpec& spec) {
  nlohmann::ordered_json config;
  config["model_type"] = spec.model_type;
  config["vocab_size"] = spec.vocab_size;
  config["hidden_size"] = spec.hidden_size;
  config["num_hidden_layers"] = spec.num_layers;
  config["num_attention_heads"] = spec.num_heads;
  config["max_position_embeddings"] = spec.max_position_embeddings;
  config["tie_word_embeddings"] = spec.tie_word_embeddings;
  // The bundled tokenizer's ids: <s> = 1, </s> = 2.
  config["bos_token_id"] = 1;
  config["eos_token_id"] = 2;
  config["torch_dtype"] = TorchDTypeName(spec.dtype);
  if (spec.model_type == "opt") {
    config["architectures"] = {"OPTForCausalLM"};
    config["ffn_dim"] = spec.intermediate_size;
    config["word_embed_proj_dim"] =
        spec.word_embed_proj_dim > 0 ? spec.word_embed_proj_dim : spec.hidden_size;
    config["do_layer_norm_before"] = true;
    config["activation_function"] = "relu";
    config["enable_bias"] = true;
  } else {
    config["architectures"] = {"LlamaForCausalLM"};
    config["intermediate_size"] = spec.intermediate_size;
    config["num_key_value_heads"] = spec.num_kv_heads;
    if (spec.head_dim > 0) config["head_dim"] = spec.head_dim;
    config["rms_norm_eps"] = spec.norm_eps;
    config["rope_theta"] = spec.rope_theta;
    config["rope_scaling"] = nullptr;
    config["hidden_act"] = "silu";
    config["attention_bias"] = spec.attention_bias;
    config["mlp_bias"] = spec.mlp_bias;
  }
  if (spec.num_experts > 0) {
    config["num_experts_per_tok"] = spec.experts_per_token;
    if (spec.model_type == "mixtral") {
      config["architectures"] = {"MixtralForCausalLM"};
      config["num_local_experts"] = spec.num_experts;
    } else {
      config["architectures"] = {spec.model_type == "qwen2_moe" ? "Qwen2MoeForCausalLM"
                                                                : "Qwen3MoeForCausalLM"};
      config["num_experts"] = spec.num_experts;
      config["moe_intermediate_size"] = spec.moe_intermediate_size;
      config["norm_topk_prob"] = spec.norm_topk_prob;
      config["decoder_sparse_step"] = 1;
      config["mlp_only_layers"] = spec.mlp_only_layers;
      if (spec.model_type == "qwen2_moe") {
        config["shared_expert_intermediate_size"] = spec.shared_expert_intermediate_size;
      }
    }
  }
  return config.dump(2) + "\n";
}

void WriteRandomHfCheckpoint(const std::string& dir, const RandomModelSpec& spec) {
  const fs::path out(dir);
  fs::create_directories(out);
  WriteText(out / "config.json", RandomConfigJson(spec));
  formats::WriteSafetensors((out / "model.safetensors").string(),
                            spec.model_type == "opt" ? OptTensors(spec) : LlamaTensors(spec));
  if (spec.with_tokenizer) {
    const fs::path source = fs::path(ZINF_SOURCE_DIR) / "models" / "stories260K";
    for (const char* name :
         {"tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"}) {
      fs::copy_file(source / name, out / name, fs::copy_options::overwrite_existing);
    }
  }
}

std::vector<std::byte> ToBytes(const std::vector<float>& values, DType dtype) {
  std::vector<std::byte> bytes(values.size() * DTypeSize(dtype));
  ConvertFromF32(dtype, values.data(), bytes.data(), values.size());
  return bytes;
}

namespace {

// The directories MakeTempDir made, removed when the test process exits (a test binary runs
// thousands of times over a project's life; each left its directories behind before). Set
// ZINF_KEEP_TEST_DIRS to keep them for a look after a failure.
class TempDirRegistry {
 public:
  void Add(const fs::path& dir) {
    if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
  }
  ~TempDirRegistry() {
    if (std::getenv("ZINF_KEEP_TEST_DIRS") != nullptr) return;
    for (const fs::path& dir : dirs_) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  }

 private:
  std::vector<fs::path> dirs_;
};

TempDirRegistry& TempDirs() {
  static TempDirRegistry registry;
  return registry;
}

}  // namespace

std::string MakeTempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("zinf-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  TempDirs().Add(dir);
  return dir.string();
}

}  // namespace zinf::testing
