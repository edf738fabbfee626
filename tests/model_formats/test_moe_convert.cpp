// Mixture-of-experts checkpoints through zinf convert: one extent per expert (format version 3),
// routers kept in floating point when the rest is quantized, and the bad inputs the converter
// must refuse with the file and tensor named.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "engine/error.h"
#include "engine/tensor_names.h"
#include "model_formats/converter.h"
#include "model_formats/safetensors.h"
#include "model_formats/zinf_format.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {
namespace {

namespace names = zinf::tensor_names;
using Catch::Matchers::Contains;
using testing::MakeTempDir;
using testing::Qwen2MoeSpec;
using testing::RandomModelSpec;

std::string WriteQwen2Moe(const std::string& name) {
  const std::string dir = MakeTempDir(name);
  testing::WriteRandomHfCheckpoint(dir, Qwen2MoeSpec());
  return dir;
}

// Rewrites one field of DIR/config.json.
void EditConfig(const std::string& dir, const std::string& field, const nlohmann::json& value) {
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  config[field] = value;
  std::ofstream(dir + "/config.json") << config.dump(2);
}

// Rewrites DIR/model.safetensors without the tensor `dropped`.
void DropTensor(const std::string& dir, const std::string& dropped) {
  std::vector<TensorToWrite> tensors;
  {
    SafetensorsCheckpoint source(dir);
    for (const SafetensorsTensor* tensor : source.all()) {
      if (tensor->name == dropped) continue;
      tensors.push_back({tensor->name, tensor->dtype, tensor->shape,
                         std::vector<std::byte>(tensor->data.begin(), tensor->data.end())});
    }
  }
  WriteSafetensors(dir + "/model.safetensors", tensors);
}

std::string ConvertError(const std::string& hf_dir) {
  ConvertOptions options;
  options.overwrite = true;
  try {
    ConvertCheckpoint(hf_dir, MakeTempDir("moe-refused"), options);
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("the conversion of " << hf_dir << " succeeded");
  return "";
}

}  // namespace

TEST_CASE("a Qwen2-MoE checkpoint converts to one extent per expert, format version 3") {
  const std::string hf = WriteQwen2Moe("qwen2-moe-hf");
  const std::string out = MakeTempDir("qwen2-moe-zinf");
  ConvertOptions options;
  options.overwrite = true;
  ConvertCheckpoint(hf, out, options);
  const Checkpoint checkpoint = LoadCheckpoint(out);
  const RandomModelSpec spec = Qwen2MoeSpec();
  // embed, 3 layers of which 2 sparse with 8 experts each, head.
  REQUIRE(checkpoint.extents.size() == 1 + 3 + 2 * 8 + 1);
  CHECK(checkpoint.extents[1].name == "layer.0");
  CHECK(checkpoint.extents[2].name == "layer.0.expert.0");
  CHECK(checkpoint.extents[2].kind == ExtentKind::kExpert);
  CHECK(checkpoint.extents[2].expert == 0);
  CHECK(checkpoint.extents[9].name == "layer.0.expert.7");
  CHECK(checkpoint.extents[10].name == "layer.1");  // dense: its MLP is in the layer's extent
  CHECK(checkpoint.extents[10].find(names::kGate) != nullptr);
  CHECK(checkpoint.extents[11].name == "layer.2");
  const ExtentInfo& sparse = checkpoint.extents[1];
  CHECK(sparse.find(names::kRouter)->shape == std::vector<int64_t>{8, 64});
  CHECK(sparse.find(names::kSharedExpertGate)->shape == std::vector<int64_t>{1, 64});
  CHECK(sparse.find(names::kSharedDown)->shape == std::vector<int64_t>{64, 80});
  CHECK(sparse.find(names::kGate) == nullptr);
  CHECK(checkpoint.extents[2].find(names::kDown)->shape == std::vector<int64_t>{64, 32});
  for (const ExtentInfo& extent : checkpoint.extents) CHECK(extent.offset % 4096 == 0);
  CHECK(checkpoint.config.moe.num_experts == spec.num_experts);
  CHECK(checkpoint.config.moe.shared_expert_ffn == 80);
  CHECK(checkpoint.config.moe.dense_layers == std::vector<int>{1});
  std::ifstream manifest(out + "/manifest.json");
  CHECK(nlohmann::json::parse(manifest)["version"] == 3);
}

TEST_CASE("int4 MoE conversion quantizes experts but keeps routers in floating point") {
  const std::string hf = WriteQwen2Moe("qwen2-moe-int4-hf");
  const std::string out = MakeTempDir("qwen2-moe-int4");
  ConvertOptions options;
  options.overwrite = true;
  options.dtype = DType::kQ4;
  options.group_size = 32;
  ConvertCheckpoint(hf, out, options);
  const Checkpoint checkpoint = LoadCheckpoint(out);
  CHECK(checkpoint.extents[1].find(names::kRouter)->dtype == DType::kF32);
  CHECK(checkpoint.extents[1].find(names::kSharedExpertGate)->dtype == DType::kF32);
  CHECK(checkpoint.extents[1].find(names::kSharedUp)->dtype == DType::kQ4);
  CHECK(checkpoint.extents[2].find(names::kUp)->dtype == DType::kQ4);
}

TEST_CASE("MoE bad input: each a clear error naming the file and the tensor or field") {
  SECTION("more experts per token than experts") {
    const std::string hf = WriteQwen2Moe("moe-bad-k");
    EditConfig(hf, "num_experts_per_tok", 9);
    const std::string message = ConvertError(hf);
    CHECK_THAT(message,
               Contains("config.json") && Contains("num_experts_per_tok (9)") && Contains("8"));
  }
  SECTION("more experts than zinf lays out") {
    const std::string hf = WriteQwen2Moe("moe-too-many");
    EditConfig(hf, "num_experts", 5000);
    CHECK_THAT(ConvertError(hf), Contains("config.json") && Contains("5000 experts"));
  }
  SECTION("an expert tensor missing") {
    const std::string hf = WriteQwen2Moe("moe-missing");
    DropTensor(hf, "model.layers.2.mlp.experts.5.up_proj.weight");
    CHECK_THAT(ConvertError(hf), Contains("model.layers.2.mlp.experts.5.up_proj.weight") &&
                                     Contains("lacks 1 tensor"));
  }
  SECTION("an expert beyond the config's count") {
    const std::string hf = WriteQwen2Moe("moe-extra");
    EditConfig(hf, "num_experts", 7);
    CHECK_THAT(ConvertError(hf),
               Contains("model.safetensors") && Contains("experts.7.") && Contains("7 experts"));
  }
  SECTION("misshaped expert") {
    const std::string hf = WriteQwen2Moe("moe-shape");
    EditConfig(hf, "moe_intermediate_size", 40);
    CHECK_THAT(ConvertError(hf), Contains("model.layers.0.mlp.experts.0.down_proj.weight") &&
                                     Contains("[64, 32]") && Contains("[64, 40]"));
  }
  SECTION("experts in a layer the config makes dense") {
    const std::string hf = WriteQwen2Moe("moe-dense-layer");
    EditConfig(hf, "mlp_only_layers", nlohmann::json::array({0, 1}));
    CHECK_THAT(ConvertError(hf), Contains("layer 0") && Contains("mlp_only_layers"));
  }
  SECTION("an unknown expert layout") {
    const std::string hf = WriteQwen2Moe("moe-unknown");
    EditConfig(hf, "model_type", "deepseek_v3");
    CHECK_THAT(ConvertError(hf),
               Contains("config.json") && Contains("deepseek_v3") && Contains("qwen2_moe"));
  }
}

}  // namespace zinf::formats
