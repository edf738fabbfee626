// Quantized checkpoints in the format: version 2 manifests with per-tensor int8 / int4 dtypes,
// what the loader refuses, --keep-float, and int4's bytes per parameter on a 7B shape.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/converter.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "model_formats/weight_encoding.h"
#include "model_formats/zinf_format.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {
namespace {

using Catch::Matchers::Contains;
using nlohmann::json;

const std::string kStoriesDir = std::string(ZINF_SOURCE_DIR) + "/models/stories260K";

std::string ConvertedStories(const std::string& name, DType dtype, int group_size,
                             const std::string& keep_float = "") {
  std::string dir = testing::MakeTempDir(name) + "/zinf";
  ConvertOptions options;
  options.dtype = dtype;
  options.group_size = group_size;
  options.keep_float = ParseKeepFloat(keep_float);
  ConvertCheckpoint(kStoriesDir, dir, options);
  return dir;
}

json ReadManifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  return json::parse(in);
}

std::string LoadErrorAfter(const std::string& dir, const std::function<void(json&)>& edit) {
  json manifest = ReadManifest(dir);
  edit(manifest);
  std::ofstream(dir + "/manifest.json") << manifest.dump(2);
  try {
    LoadCheckpoint(dir);
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("loading the edited manifest succeeded, but an error was expected");
  return "";
}

const TensorInfo& Find(const Checkpoint& checkpoint, const std::string& extent,
                       const std::string& tensor) {
  for (const ExtentInfo& e : checkpoint.extents) {
    if (e.name == extent) return *e.find(tensor);
  }
  FAIL("no extent " << extent);
  throw Error("unreachable");
}

}  // namespace

TEST_CASE("int4 conversion writes a version 2 manifest; matrices int4, norms f32") {
  const std::string dir = ConvertedStories("q4-manifest", DType::kQ4, 32);
  const json manifest = ReadManifest(dir);
  CHECK(manifest["version"] == 2);
  CHECK(manifest["dtype"] == "f32");
  const Checkpoint checkpoint = LoadCheckpoint(dir);
  const TensorInfo& down = Find(checkpoint, "layer.0", "down");  // [64, 172]: 172 % 32 != 0
  CHECK(down.dtype == DType::kQ4);
  CHECK(down.group_size == 32);
  // 64 rows × 6 groups × 16 bytes, then 64 × 6 × {scale, min} f16.
  CHECK(down.size_bytes == 64 * 6 * 16 + 64 * 6 * 4);
  CHECK(Find(checkpoint, "layer.0", "attn_norm").dtype == DType::kF32);
  CHECK(Find(checkpoint, "head", "lm_head").dtype == DType::kQ4);
  CHECK(checkpoint.weights_description() == "int4-g32 (f32 norms)");
}

TEST_CASE("--keep-float leaves the named matrices in the float dtype") {
  const Checkpoint checkpoint =
      LoadCheckpoint(ConvertedStories("i8-keep", DType::kI8, 64, "embed,head"));
  CHECK(Find(checkpoint, "embed", "token_embed").dtype == DType::kF32);
  CHECK(Find(checkpoint, "head", "lm_head").dtype == DType::kF32);
  CHECK(Find(checkpoint, "layer.2", "q").dtype == DType::kI8);
  CHECK_THROWS_WITH(ParseKeepFloat("head,attn_norm"),
                    Contains("'attn_norm' is not a weight matrix"));
}

TEST_CASE("the loader refuses quantized tensors where they cannot be") {
  const std::string dir = ConvertedStories("q4-refuse", DType::kQ4, 64);
  SECTION("in a version 1 manifest") {
    const std::string message = LoadErrorAfter(dir, [](json& m) { m["version"] = 1; });
    CHECK_THAT(message, Contains("extents[0].tensors[0].dtype"));
    CHECK_THAT(message, Contains("'int4'"));
  }
  SECTION("a norm stored as int8") {
    const std::string message =
        LoadErrorAfter(dir, [](json& m) { m["extents"][1]["tensors"][0]["dtype"] = "int8"; });
    CHECK_THAT(message, Contains("tensor 'attn_norm' is int8"));
    CHECK_THAT(message, Contains("only matrices may be quantized"));
  }
  SECTION("an int4 group size the kernels do not have") {
    const std::string message =
        LoadErrorAfter(dir, [](json& m) { m["extents"][1]["tensors"][1]["group_size"] = 48; });
    CHECK_THAT(message, Contains("tensor 'q' has group_size 48, expected 32, 64 or 128"));
  }
  SECTION("a size that does not match the encoding") {
    const std::string message =
        LoadErrorAfter(dir, [](json& m) { m["extents"][1]["tensors"][1]["size_bytes"] = 4096; });
    CHECK_THAT(message, Contains("tensor 'q' size_bytes is 4096"));
  }
  SECTION("a top-level dtype that is quantized") {
    const std::string message = LoadErrorAfter(dir, [](json& m) { m["dtype"] = "int4"; });
    CHECK_THAT(message, Contains("'dtype'"));
  }
}

TEST_CASE("an int4-g64 Llama-2-7B-shape checkpoint takes at most 0.6 bytes per parameter") {
  const ModelConfig config =
      LoadHfConfig(std::string(ZINF_SOURCE_DIR) + "/configs/llama-2-7b.json");
  const std::vector<ExtentInfo> extents =
      LayoutExtents(ExpectedExtents(config), WeightEncoding::For(DType::kQ4, DType::kF16, 64, {}));
  double parameters = 0;
  for (const ExtentInfo& extent : extents)
    for (const TensorInfo& tensor : extent.tensors) parameters += tensor.num_elements();
  const double bytes_per_parameter = static_cast<double>(PaddedFileBytes(extents)) / parameters;
  WARN("int4-g64 7B: " << bytes_per_parameter << " bytes per parameter");
  CHECK(bytes_per_parameter <= 0.6);
}

}  // namespace zinf::formats
