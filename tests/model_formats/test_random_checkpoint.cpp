// The random Hugging Face checkpoints other tests build on: configs parse, tensors match them.
#include <catch2/catch.hpp>
#include <filesystem>

#include "model_formats/hf_config.h"
#include "model_formats/safetensors.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

TEST_CASE("random checkpoints are self-consistent Hugging Face directories",
          "[random_checkpoint]") {
  struct Case {
    const char* name;
    RandomModelSpec spec;
    size_t num_tensors;
    const char* must_have;
    const char* must_lack;
  };
  RandomModelSpec bf16 = Qwen2Spec();
  bf16.dtype = DType::kBF16;
  const std::vector<Case> cases = {
      // embed + 2 × (2 norms, 4 proj, 4 biases, 3 mlp) + norm + lm_head
      {"llama-bias", LlamaWithBiasSpec(), 1 + 2 * 13 + 2, "model.layers.1.self_attn.o_proj.bias",
       "model.layers.0.self_attn.q_norm.weight"},
      {"qwen2-bf16", bf16, 1 + 2 * 12 + 2, "model.layers.0.self_attn.k_proj.bias",
       "model.layers.0.self_attn.o_proj.bias"},
      {"qwen3", Qwen3Spec(), 1 + 2 * 11 + 1, "model.layers.1.self_attn.k_norm.weight",
       "lm_head.weight"},
      // embed, positions, project_in/out + 2 × 16 + final norm weight/bias
      {"opt", OptSpec(), 4 + 2 * 16 + 2, "model.decoder.project_in.weight", "lm_head.weight"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string dir = MakeTempDir(std::string("random-") + c.name);
    WriteRandomHfCheckpoint(dir, c.spec);
    const ModelConfig config = formats::LoadHfConfig(dir + "/config.json");
    CHECK(config.model_type == c.spec.model_type);
    CHECK(config.vocab_size == 512);
    formats::SafetensorsCheckpoint checkpoint(dir);
    CHECK(checkpoint.all().size() == c.num_tensors);
    CHECK(checkpoint.find(c.must_have) != nullptr);
    CHECK(checkpoint.find(c.must_lack) == nullptr);
    for (const formats::SafetensorsTensor* tensor : checkpoint.all()) {
      CHECK(tensor->dtype == c.spec.dtype);
    }
    const auto tokenizer =
        formats::LoadSentencePieceTokenizer(dir + "/tokenizer.model", true, false);
    CHECK(tokenizer->vocab_size() == config.vocab_size);

    if (config.family == Family::kOpt) {
      CHECK(checkpoint.find("model.decoder.embed_positions.weight")->shape ==
            std::vector<int64_t>{128 + 2, 64});
      CHECK(checkpoint.find("model.decoder.embed_tokens.weight")->shape ==
            std::vector<int64_t>{512, 32});
      CHECK(checkpoint.find("model.decoder.project_out.weight")->shape ==
            std::vector<int64_t>{32, 64});
    } else {
      CHECK(checkpoint.find("model.layers.0.self_attn.q_proj.weight")->shape ==
            std::vector<int64_t>{config.q_dim(), config.hidden_size});
      CHECK(checkpoint.find("model.layers.0.self_attn.k_proj.weight")->shape ==
            std::vector<int64_t>{config.kv_dim(), config.hidden_size});
      CHECK(checkpoint.find("model.layers.1.mlp.down_proj.weight")->shape ==
            std::vector<int64_t>{config.hidden_size, config.intermediate_size});
    }
  }
}

TEST_CASE("random checkpoints are deterministic in the seed", "[random_checkpoint]") {
  RandomModelSpec spec = LlamaWithBiasSpec();
  const std::string a = MakeTempDir("seed-a"), b = MakeTempDir("seed-b"), c = MakeTempDir("seed-c");
  WriteRandomHfCheckpoint(a, spec);
  WriteRandomHfCheckpoint(b, spec);
  spec.seed = 2;
  WriteRandomHfCheckpoint(c, spec);
  auto bytes = [](const std::string& dir) {
    formats::SafetensorsFile file(dir + "/model.safetensors");
    const auto data = file.tensors().front().data;
    return std::vector<std::byte>(data.begin(), data.end());
  };
  CHECK(bytes(a) == bytes(b));
  CHECK(bytes(a) != bytes(c));
}

}  // namespace zinf::testing
