// Tests of the zinf v1 manifest: round trip, and refusal (naming manifest and field or extent) of
// unknown versions, missing fields, misaligned or overlapping extents and truncated weights.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model_formats/converter.h"
#include "model_formats/hf_config.h"
#include "model_formats/zinf_format.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

const std::string kStoriesDir = std::string(ZINF_SOURCE_DIR) + "/models/stories260K";

// A freshly converted stories260K checkpoint in a directory of its own.
std::string ConvertedStories(const std::string& name) {
  std::string dir = testing::MakeTempDir(name) + "/zinf";
  ConvertCheckpoint(kStoriesDir, dir, {});
  return dir;
}

json ReadManifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  return json::parse(in);
}

void WriteManifestJson(const std::string& dir, const json& manifest) {
  std::ofstream(dir + "/manifest.json") << manifest.dump(2);
}

std::string LoadError(const std::string& dir) {
  try {
    LoadCheckpoint(dir);
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("loading " << dir << " succeeded, but an error was expected");
  return "";
}

TEST_CASE("a converted manifest has the v1 fields and round-trips through WriteManifest") {
  std::string dir = ConvertedStories("manifest-roundtrip");
  json manifest = ReadManifest(dir);
  CHECK(manifest["format"] == "zinf");
  CHECK(manifest["version"] == 1);
  CHECK(manifest["created_by"] == "zinf 0.1.0");
  CHECK(manifest["source"]["directory"] == "stories260K");
  CHECK(manifest["source"]["model_type"] == "llama");
  CHECK(manifest["dtype"] == "f32");
  CHECK(manifest["weights_file"] == "weights.bin");
  CHECK(manifest["tokenizer"]["kind"] == "sentencepiece");
  CHECK(manifest["config"]["rope_scaling"]["type"] == "none");
  CHECK(manifest["extents"][1]["kind"] == "layer");
  CHECK(manifest["extents"][1]["layer"] == 0);
  CHECK(manifest["extents"][1]["tensors"][1]["name"] == "q");
  CHECK(manifest["extents"][1]["tensors"][1]["shape"] == json::array({64, 64}));
  std::string xxh3 = manifest["extents"][0]["xxh3"];
  CHECK(xxh3.size() == 16);
  CHECK(xxh3.find_first_not_of("0123456789abcdef") == std::string::npos);

  Checkpoint first = LoadCheckpoint(dir);
  ModelConfig hf = LoadHfConfig(kStoriesDir + "/config.json");
  CHECK(first.config.num_kv_heads == hf.num_kv_heads);
  CHECK(first.config.norm_eps == hf.norm_eps);
  CHECK(first.config.tie_word_embeddings == hf.tie_word_embeddings);
  CHECK(first.config.eos_token_ids == hf.eos_token_ids);
  CHECK(first.directory == fs::absolute(dir).string());

  WriteManifest(dir, first);
  CHECK_FALSE(fs::exists(dir + "/manifest.json.tmp"));
  Checkpoint second = LoadCheckpoint(dir);
  REQUIRE(second.extents.size() == first.extents.size());
  for (size_t idx = 0; idx < first.extents.size(); ++idx) {
    CHECK(second.extents[idx].name == first.extents[idx].name);
    CHECK(second.extents[idx].offset == first.extents[idx].offset);
    CHECK(second.extents[idx].xxh3 == first.extents[idx].xxh3);
    CHECK(second.extents[idx].tensors.size() == first.extents[idx].tensors.size());
  }
  CHECK(second.config.rope_theta == first.config.rope_theta);
  CHECK(second.tokenizer->add_bos == first.tokenizer->add_bos);
}

TEST_CASE("a manifest from a newer or other format is refused with the versions this zinf reads") {
  std::string dir = ConvertedStories("manifest-version");
  json manifest = ReadManifest(dir);
  SECTION("version 99") {
    manifest["version"] = 99;
    WriteManifestJson(dir, manifest);
    std::string message = LoadError(dir);
    CHECK_THAT(message, Contains(dir + "/manifest.json"));
    CHECK_THAT(message, Contains("version 99"));
    CHECK_THAT(message, Contains("reads versions 1 to 3"));
  }
  SECTION("another format") {
    manifest["format"] = "gguf";
    WriteManifestJson(dir, manifest);
    CHECK_THAT(LoadError(dir), Contains("not a zinf manifest"));
  }
  SECTION("no manifest at all") {
    fs::remove(dir + "/manifest.json");
    CHECK_THAT(LoadError(dir), Contains("zinf convert"));
  }
  SECTION("malformed JSON") {
    std::ofstream(dir + "/manifest.json") << "{\"format\": \"zinf\",";
    CHECK_THAT(LoadError(dir), Contains("malformed JSON"));
  }
}

// Edits one field of a converted manifest; the load must fail with all of `expected` in it.
void ExpectManifestError(const std::string& name, const std::function<void(json&)>& edit,
                         const std::vector<std::string>& expected) {
  std::string dir = ConvertedStories(name);
  json manifest = ReadManifest(dir);
  edit(manifest);
  WriteManifestJson(dir, manifest);
  std::string message = LoadError(dir);
  CHECK_THAT(message, Contains(dir + "/manifest.json"));
  for (const std::string& text : expected) CHECK_THAT(message, Contains(text));
}

TEST_CASE("manifests with missing or mistyped fields are refused, naming the field") {
  ExpectManifestError("manifest-missing", [](json& m) { m["config"].erase("hidden_size"); },
                      {"'config.hidden_size' is missing"});
  ExpectManifestError("manifest-type", [](json& m) { m["extents"][2]["offset"] = "4096"; },
                      {"'extents[2].offset'", "non-negative integer"});
  ExpectManifestError("manifest-dtype", [](json& m) { m["dtype"] = "q4"; }, {"'dtype'", "q4"});
  ExpectManifestError("manifest-xxh3", [](json& m) { m["extents"][0]["xxh3"] = "12ab"; },
                      {"'extents[0].xxh3'", "16 hex digits"});
  ExpectManifestError("manifest-escape", [](json& m) { m["weights_file"] = "../weights.bin"; },
                      {"'weights_file'"});
  ExpectManifestError("manifest-config", [](json& m) { m["config"]["num_kv_heads"] = 3; },
                      {"config", "num_key_value_heads"});
}

TEST_CASE("misaligned, overlapping, out-of-order and overrunning extents are refused") {
  ExpectManifestError(
      "extent-misaligned",
      [](json& m) { m["extents"][2]["offset"] = m["extents"][2]["offset"].get<uint64_t>() + 64; },
      {"extent 'layer.1'", "not a multiple of 4096"});
  ExpectManifestError("extent-overlap",
                      [](json& m) { m["extents"][2]["offset"] = m["extents"][1]["offset"]; },
                      {"extent 'layer.1'", "overlaps"});
  ExpectManifestError("extent-order", [](json& m) { std::swap(m["extents"][1], m["extents"][2]); },
                      {"'layer.1'", "expected 'layer.0'"});
  ExpectManifestError("extent-padding", [](json& m) { m["extents"][0]["padded_bytes"] = 4096; },
                      {"extent 'embed'", "padded_bytes"});
  ExpectManifestError("tensor-outside",
                      [](json& m) {
                        json& q = m["extents"][3]["tensors"][1];
                        q["offset"] = m["extents"][3]["size_bytes"].get<uint64_t>() - 64;
                      },
                      {"extent 'layer.2'", "tensor 'q'", "runs past"});
  ExpectManifestError("tensor-shape",
                      [](json& m) {
                        m["extents"][4]["tensors"][2]["shape"] = {64, 32};
                      },
                      {"extent 'layer.3'", "tensor 'k'", "[64, 32]"});
  ExpectManifestError("tensor-missing", [](json& m) { m["extents"][5]["tensors"].erase(3); },
                      {"extent 'layer.4'", "lacks tensor 'v'"});
}

TEST_CASE("a truncated weights file is refused; missing tail padding is not") {
  std::string dir = ConvertedStories("weights-truncated");
  Checkpoint checkpoint = LoadCheckpoint(dir);
  const ExtentInfo& last = checkpoint.extents.back();
  // Only the padding after the last tensor gone: every extent's tensor bytes are still there.
  fs::resize_file(checkpoint.weights_file, last.offset + last.size_bytes);
  CHECK(LoadCheckpoint(dir).extents.size() == 7);

  fs::resize_file(checkpoint.weights_file, last.offset + last.size_bytes - 1);
  std::string message = LoadError(dir);
  CHECK_THAT(message, Contains(dir + "/manifest.json"));
  CHECK_THAT(message, Contains("weights.bin"));
  CHECK_THAT(message, Contains("truncated"));
  CHECK_THAT(message, Contains("'head'"));
}

}  // namespace
}  // namespace zinf::formats
