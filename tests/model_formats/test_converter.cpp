// Tests of zinf convert: the bundled stories260K and random Llama/Qwen3/OPT checkpoints convert to
// the expected extents, bytes and checksums; malformed Hugging Face checkpoints are refused.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/error.h"
#include "engine/tensor_names.h"
#include "model_formats/converter.h"
#include "model_formats/safetensors.h"
#include "model_formats/zinf_format.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {
namespace {

namespace fs = std::filesystem;
namespace names = zinf::tensor_names;
using Catch::Matchers::Contains;

const std::string kStoriesDir = std::string(ZINF_SOURCE_DIR) + "/models/stories260K";

std::vector<std::byte> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// A tensor's bytes in the converted weights file.
std::span<const std::byte> TensorBytes(const std::vector<std::byte>& weights,
                                       const ExtentInfo& extent, const char* tensor_name) {
  const TensorInfo* tensor = extent.find(tensor_name);
  REQUIRE(tensor != nullptr);
  return std::span<const std::byte>(weights).subspan(extent.offset + tensor->offset_in_extent,
                                                     tensor->size_bytes);
}

bool SameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

// Copies stories260K to `dir` with its tensors passed through `edit` (rename, drop, add, reshape).
void WriteEditedStories(const std::string& dir,
                        const std::function<void(std::vector<TensorToWrite>&)>& edit) {
  for (const char* file : {"config.json", "tokenizer.model", "tokenizer_config.json"}) {
    fs::copy_file(kStoriesDir + "/" + file, dir + "/" + file);
  }
  std::vector<TensorToWrite> tensors;
  {
    SafetensorsCheckpoint source(kStoriesDir);
    for (const SafetensorsTensor* tensor : source.all()) {
      tensors.push_back({tensor->name, tensor->dtype, tensor->shape,
                         std::vector<std::byte>(tensor->data.begin(), tensor->data.end())});
    }
  }
  edit(tensors);
  WriteSafetensors(dir + "/model.safetensors", tensors);
}

std::string ConvertError(const std::string& hf_dir, const std::string& out_dir,
                         const ConvertOptions& options = {}) {
  try {
    ConvertCheckpoint(hf_dir, out_dir, options);
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("conversion of " << hf_dir << " succeeded, but an error was expected");
  return "";
}

TEST_CASE("stories260K converts to 7 aligned, checksummed extents with the source bytes") {
  std::string out = testing::MakeTempDir("convert-stories") + "/zinf";
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  ConvertOptions options;
  options.progress = [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); };
  ConvertSummary summary = ConvertCheckpoint(kStoriesDir, out, options);

  Checkpoint checkpoint = LoadCheckpoint(out);
  REQUIRE(checkpoint.extents.size() == 7);
  CHECK(summary.num_extents == 7);
  CHECK(summary.num_tensors == 1 + 5 * 9 + 2);  // token_embed; 9 per layer; final_norm, lm_head
  CHECK(checkpoint.dtype == DType::kF32);
  CHECK(checkpoint.weights_file == fs::absolute(out).string() + "/weights.bin");
  CHECK(checkpoint.extents.front().name == "embed");
  CHECK(checkpoint.extents[3].name == "layer.2");
  CHECK(checkpoint.extents[3].layer == 2);
  CHECK(checkpoint.extents.back().name == "head");
  REQUIRE(checkpoint.tokenizer.has_value());
  CHECK(checkpoint.tokenizer->kind == "sentencepiece");
  CHECK(checkpoint.tokenizer->file == "tokenizer.model");
  CHECK(checkpoint.tokenizer->add_bos);
  CHECK_FALSE(checkpoint.tokenizer->add_eos);
  for (const char* file : {"tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"}) {
    CHECK(fs::exists(out + "/" + file));
  }
  CHECK_FALSE(fs::exists(out + "/weights.bin.tmp"));

  std::vector<std::byte> weights = ReadFileBytes(checkpoint.weights_file);
  const ExtentInfo& last = checkpoint.extents.back();
  CHECK(weights.size() == last.offset + last.padded_bytes);
  CHECK(summary.weights_bytes == weights.size());
  REQUIRE(progress.size() == 7);
  CHECK(progress.back() == std::make_pair(uint64_t{weights.size()}, uint64_t{weights.size()}));
  for (const ExtentInfo& extent : checkpoint.extents) {
    INFO("extent " << extent.name);
    CHECK(extent.offset % 4096 == 0);
    CHECK(extent.padded_bytes % 4096 == 0);
    for (const TensorInfo& tensor : extent.tensors) CHECK(tensor.offset_in_extent % 64 == 0);
    CHECK(XXH3_64bits(weights.data() + extent.offset, extent.size_bytes) == extent.xxh3);
  }

  SafetensorsCheckpoint source(kStoriesDir);
  auto source_bytes = [&](const std::string& name) {
    const SafetensorsTensor* tensor = source.find(name);
    REQUIRE(tensor != nullptr);
    return tensor->data;
  };
  const ExtentInfo& embed = checkpoint.extents[0];
  const ExtentInfo& layer4 = checkpoint.extents[5];
  CHECK(SameBytes(TensorBytes(weights, embed, names::kTokenEmbed),
                  source_bytes("model.embed_tokens.weight")));
  CHECK(SameBytes(TensorBytes(weights, layer4, names::kK),
                  source_bytes("model.layers.4.self_attn.k_proj.weight")));
  CHECK(SameBytes(TensorBytes(weights, layer4, names::kDown),
                  source_bytes("model.layers.4.mlp.down_proj.weight")));
  CHECK(SameBytes(TensorBytes(weights, layer4, names::kFfnNorm),
                  source_bytes("model.layers.4.post_attention_layernorm.weight")));
  CHECK(
      SameBytes(TensorBytes(weights, last, names::kFinalNorm), source_bytes("model.norm.weight")));
  // Tied: the head holds its own copy of the token embedding.
  CHECK(SameBytes(TensorBytes(weights, last, names::kLmHead),
                  source_bytes("model.embed_tokens.weight")));
  CHECK(last.find(names::kLmHead)->shape == std::vector<int64_t>{512, 64});
}

TEST_CASE("--dtype f16 and bf16 store each value rounded to nearest even") {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    INFO("dtype " << DTypeName(dtype));
    std::string out = testing::MakeTempDir("convert-dtype") + "/zinf";
    ConvertOptions options;
    options.dtype = dtype;
    ConvertCheckpoint(kStoriesDir, out, options);
    Checkpoint checkpoint = LoadCheckpoint(out);
    CHECK(checkpoint.dtype == dtype);
    std::vector<std::byte> weights = ReadFileBytes(checkpoint.weights_file);

    SafetensorsCheckpoint source(kStoriesDir);
    const SafetensorsTensor* q = source.find("model.layers.1.self_attn.q_proj.weight");
    REQUIRE(q != nullptr);
    const TensorInfo* stored = checkpoint.extents[2].find(names::kQ);
    REQUIRE(stored != nullptr);
    CHECK(stored->dtype == dtype);
    CHECK(stored->size_bytes == 64 * 64 * 2);
    std::span<const std::byte> bytes = TensorBytes(weights, checkpoint.extents[2], names::kQ);
    int mismatches = 0;
    for (size_t idx = 0; idx < 64 * 64; ++idx) {
      float value;
      std::memcpy(&value, q->data.data() + idx * 4, 4);
      uint16_t expected = dtype == DType::kF16 ? F32ToF16(value) : F32ToBf16(value);
      uint16_t actual;
      std::memcpy(&actual, bytes.data() + idx * 2, 2);
      mismatches += expected != actual;
    }
    CHECK(mismatches == 0);
    for (const ExtentInfo& extent : checkpoint.extents) {
      CHECK(XXH3_64bits(weights.data() + extent.offset, extent.size_bytes) == extent.xxh3);
    }
  }
}

// The canonical tensor names of one extent, in file order.
std::vector<std::string> TensorNames(const ExtentInfo& extent) {
  std::vector<std::string> result;
  for (const TensorInfo& tensor : extent.tensors) result.push_back(tensor.name);
  return result;
}

TEST_CASE("random Llama-with-bias, Qwen3 and OPT checkpoints convert to their canonical tensors") {
  std::string root = testing::MakeTempDir("convert-random");
  using Names = std::vector<std::string>;

  SECTION("llama with attention biases, untied lm_head") {
    testing::WriteRandomHfCheckpoint(root + "/hf", testing::LlamaWithBiasSpec());
    ConvertCheckpoint(root + "/hf", root + "/zinf", {});
    Checkpoint checkpoint = LoadCheckpoint(root + "/zinf");
    REQUIRE(checkpoint.extents.size() == 4);
    CHECK(TensorNames(checkpoint.extents[1]) == Names{"attn_norm", "q", "k", "v", "o", "q_bias",
                                                      "k_bias", "v_bias", "o_bias", "ffn_norm",
                                                      "gate", "up", "down"});
    std::vector<std::byte> weights = ReadFileBytes(checkpoint.weights_file);
    SafetensorsCheckpoint source(root + "/hf");
    CHECK(SameBytes(TensorBytes(weights, checkpoint.extents[3], names::kLmHead),
                    source.find("lm_head.weight")->data));
    CHECK(SameBytes(TensorBytes(weights, checkpoint.extents[2], names::kOBias),
                    source.find("model.layers.1.self_attn.o_proj.bias")->data));
  }
  SECTION("qwen3: q/k norms, tied embeddings") {
    testing::WriteRandomHfCheckpoint(root + "/hf", testing::Qwen3Spec());
    ConvertCheckpoint(root + "/hf", root + "/zinf", {});
    Checkpoint checkpoint = LoadCheckpoint(root + "/zinf");
    REQUIRE(checkpoint.extents.size() == 4);
    CHECK(checkpoint.config.qk_norm);
    CHECK(TensorNames(checkpoint.extents[2]) == Names{"attn_norm", "q", "k", "v", "o", "q_norm",
                                                      "k_norm", "ffn_norm", "gate", "up", "down"});
    CHECK(checkpoint.extents[1].find(names::kQNorm)->shape == std::vector<int64_t>{16});
    std::vector<std::byte> weights = ReadFileBytes(checkpoint.weights_file);
    CHECK(SameBytes(TensorBytes(weights, checkpoint.extents[3], names::kLmHead),
                    TensorBytes(weights, checkpoint.extents[0], names::kTokenEmbed)));
  }
  SECTION("opt: LayerNorm biases, learned positions, project_in/out") {
    testing::WriteRandomHfCheckpoint(root + "/hf", testing::OptSpec());
    ConvertCheckpoint(root + "/hf", root + "/zinf", {});
    Checkpoint checkpoint = LoadCheckpoint(root + "/zinf");
    REQUIRE(checkpoint.extents.size() == 4);
    CHECK(TensorNames(checkpoint.extents[0]) ==
          Names{"token_embed", "position_embed", "project_in"});
    CHECK(checkpoint.extents[0].find(names::kPositionEmbed)->shape ==
          std::vector<int64_t>{128 + 2, 64});
    CHECK(TensorNames(checkpoint.extents[1]) ==
          Names{"attn_norm", "attn_norm_bias", "q", "k", "v", "o", "q_bias", "k_bias", "v_bias",
                "o_bias", "ffn_norm", "ffn_norm_bias", "up", "down", "up_bias", "down_bias"});
    CHECK(TensorNames(checkpoint.extents[3]) ==
          Names{"final_norm", "final_norm_bias", "project_out", "lm_head"});
    CHECK(checkpoint.extents[3].find(names::kLmHead)->shape == std::vector<int64_t>{512, 32});
  }
}

TEST_CASE("OPT tensors named 'decoder.*' (no 'model.' prefix) are accepted") {
  std::string root = testing::MakeTempDir("convert-opt-prefix");
  testing::WriteRandomHfCheckpoint(root + "/hf", testing::OptSpec());
  std::vector<TensorToWrite> tensors;
  {
    SafetensorsCheckpoint source(root + "/hf");
    for (const SafetensorsTensor* tensor : source.all()) {
      std::string name = tensor->name;
      if (name.starts_with("model.decoder.")) name = name.substr(std::strlen("model."));
      tensors.push_back({name, tensor->dtype, tensor->shape,
                         std::vector<std::byte>(tensor->data.begin(), tensor->data.end())});
    }
  }
  WriteSafetensors(root + "/hf/model.safetensors", tensors);
  ConvertCheckpoint(root + "/hf", root + "/zinf", {});
  CHECK(LoadCheckpoint(root + "/zinf").extents[0].find(names::kProjectIn) != nullptr);
}

TEST_CASE("rotary_emb.inv_freq buffers are skipped, other unknown tensors are refused") {
  std::string root = testing::MakeTempDir("convert-unknown");
  fs::create_directories(root + "/hf");
  std::string extra;
  SECTION("inv_freq is skipped") { extra = "model.layers.0.self_attn.rotary_emb.inv_freq"; }
  SECTION("an unknown tensor is an error") { extra = "model.layers.0.mlp.experts.weight"; }
  WriteEditedStories(root + "/hf", [&](std::vector<TensorToWrite>& tensors) {
    tensors.push_back({extra, DType::kF32, {4}, testing::ToBytes({1, 2, 3, 4})});
  });
  if (extra.ends_with("inv_freq")) {
    ConvertCheckpoint(root + "/hf", root + "/zinf", {});
    CHECK(LoadCheckpoint(root + "/zinf").extents.size() == 7);
  } else {
    std::string message = ConvertError(root + "/hf", root + "/zinf");
    CHECK_THAT(message, Contains("model.layers.0.mlp.experts.weight"));
    CHECK_THAT(message, Contains("model.safetensors"));
    CHECK_THAT(message, Contains("not silently dropped"));
    CHECK_FALSE(fs::exists(root + "/zinf/manifest.json"));
  }
}

TEST_CASE("wrong shapes, missing tensors and unexpected tensors are refused by name") {
  std::string root = testing::MakeTempDir("convert-bad-tensors");
  fs::create_directories(root + "/hf");
  std::string expected_text;
  std::string expected_detail;
  SECTION("wrong shape") {
    WriteEditedStories(root + "/hf", [](std::vector<TensorToWrite>& tensors) {
      for (TensorToWrite& tensor : tensors) {
        if (tensor.name == "model.layers.3.self_attn.k_proj.weight") tensor.shape = {64, 32};
      }
    });
    expected_text = "model.layers.3.self_attn.k_proj.weight";
    expected_detail = "has shape [64, 32], but config.json implies [32, 64]";
  }
  SECTION("missing tensor") {
    WriteEditedStories(root + "/hf", [](std::vector<TensorToWrite>& tensors) {
      std::erase_if(tensors, [](const TensorToWrite& tensor) {
        return tensor.name == "model.layers.1.mlp.up_proj.weight";
      });
    });
    expected_text = "model.layers.1.mlp.up_proj.weight";
    expected_detail = "lacks 1 tensor";
  }
  SECTION("a bias the config says the model does not have") {
    WriteEditedStories(root + "/hf", [](std::vector<TensorToWrite>& tensors) {
      tensors.push_back({"model.layers.2.self_attn.q_proj.bias",
                         DType::kF32,
                         {64},
                         testing::ToBytes(std::vector<float>(64, 0.5f))});
    });
    expected_text = "model.layers.2.self_attn.q_proj.bias";
    expected_detail = "no such tensor";
  }
  SECTION("a layer past num_hidden_layers") {
    WriteEditedStories(root + "/hf", [](std::vector<TensorToWrite>& tensors) {
      tensors.push_back({"model.layers.5.input_layernorm.weight",
                         DType::kF32,
                         {64},
                         testing::ToBytes(std::vector<float>(64, 1.0f))});
    });
    expected_text = "model.layers.5.input_layernorm.weight";
    expected_detail = "has 5 layers";
  }
  std::string message = ConvertError(root + "/hf", root + "/zinf");
  CHECK_THAT(message, Contains(expected_text));
  CHECK_THAT(message, Contains(expected_detail));
  CHECK_THAT(message, Contains(root + "/hf"));
}

TEST_CASE("an untied model without lm_head.weight is refused") {
  std::string root = testing::MakeTempDir("convert-no-lm-head");
  testing::WriteRandomHfCheckpoint(root + "/hf", testing::LlamaWithBiasSpec());
  std::vector<TensorToWrite> tensors;
  {
    SafetensorsCheckpoint source(root + "/hf");
    for (const SafetensorsTensor* tensor : source.all()) {
      if (tensor->name == "lm_head.weight") continue;
      tensors.push_back({tensor->name, tensor->dtype, tensor->shape,
                         std::vector<std::byte>(tensor->data.begin(), tensor->data.end())});
    }
  }
  WriteSafetensors(root + "/hf/model.safetensors", tensors);
  std::string message = ConvertError(root + "/hf", root + "/zinf");
  CHECK_THAT(message, Contains("lm_head.weight"));
  CHECK_THAT(message, Contains("tie_word_embeddings is false"));
}

TEST_CASE("an existing checkpoint is replaced only with overwrite (--force)") {
  std::string out = testing::MakeTempDir("convert-existing") + "/zinf";
  ConvertCheckpoint(kStoriesDir, out, {});
  std::string message = ConvertError(kStoriesDir, out);
  CHECK_THAT(message, Contains("--force"));
  CHECK_THAT(message, Contains(out + "/manifest.json"));

  ConvertOptions options;
  options.overwrite = true;
  options.dtype = DType::kBF16;
  ConvertCheckpoint(kStoriesDir, out, options);
  CHECK(LoadCheckpoint(out).dtype == DType::kBF16);
}

}  // namespace
}  // namespace zinf::formats
