// Safetensors reader and writer: the real stories260K file, a roundtrip, shards, and hostile headers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "model_formats/safetensors.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

const std::string kStoriesDir = std::string(ZINF_SOURCE_DIR) + "/models/stories260K";

// A file with the given header text and `data_bytes` zero bytes after it.
std::string WriteRaw(const std::string& dir, const std::string& name, const std::string& header,
                     size_t data_bytes, uint64_t header_length_override = 0) {
  const std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t length = header_length_override ? header_length_override : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
  return path;
}

std::string ErrorOf(const std::string& path) {
  try {
    SafetensorsFile file(path);
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("no error for " << path);
  return "";
}

}  // namespace

TEST_CASE("stories260K model.safetensors opens with its 47 tensors", "[safetensors]") {
  SafetensorsFile file(kStoriesDir + "/model.safetensors");
  REQUIRE(file.tensors().size() == 47);
  REQUIRE(file.metadata().at("format") == "pt");
  std::map<std::string, const SafetensorsTensor*> by_name;
  for (const SafetensorsTensor& tensor : file.tensors()) {
    CHECK(tensor.dtype == DType::kF32);
    by_name[tensor.name] = &tensor;
  }
  CHECK(by_name.at("model.embed_tokens.weight")->shape == std::vector<int64_t>{512, 64});
  CHECK(by_name.at("model.layers.0.self_attn.k_proj.weight")->shape ==
        std::vector<int64_t>{32, 64});
  CHECK(by_name.at("model.layers.4.mlp.down_proj.weight")->shape == std::vector<int64_t>{64, 172});
  CHECK(by_name.at("model.norm.weight")->shape == std::vector<int64_t>{64});
  CHECK(by_name.at("model.norm.weight")->data.size() == 64 * 4);
  CHECK(by_name.count("lm_head.weight") == 0);

  SafetensorsCheckpoint checkpoint(kStoriesDir);
  CHECK(checkpoint.all().size() == 47);
  REQUIRE(checkpoint.find("model.layers.2.mlp.up_proj.weight") != nullptr);
  CHECK(checkpoint.find("model.layers.2.mlp.up_proj.weight")->shape ==
        std::vector<int64_t>{172, 64});
  CHECK(checkpoint.find("lm_head.weight") == nullptr);
}

TEST_CASE("WriteSafetensors roundtrips names, dtypes, shapes and bytes", "[safetensors]") {
  const std::string dir = testing::MakeTempDir("st-roundtrip");
  std::vector<TensorToWrite> tensors = {
      {"b.weight", DType::kF16, {2, 3}, testing::ToBytes({1, 2, 3, 4, 5, 6}, DType::kF16)},
      {"a.bias", DType::kF32, {3}, testing::ToBytes({0.5f, -1.0f, 2.0f})},
      {"c", DType::kBF16, {1}, testing::ToBytes({3.0f}, DType::kBF16)},
      {"empty", DType::kF32, {0, 4}, {}},
  };
  const std::string path = dir + "/model.safetensors";
  WriteSafetensors(path, tensors);

  SafetensorsFile file(path);
  REQUIRE(file.tensors().size() == 4);
  CHECK(file.metadata().at("format") == "pt");
  for (const TensorToWrite& expected : tensors) {
    const auto it =
        std::find_if(file.tensors().begin(), file.tensors().end(),
                     [&](const SafetensorsTensor& t) { return t.name == expected.name; });
    REQUIRE(it != file.tensors().end());
    CHECK(it->dtype == expected.dtype);
    CHECK(it->shape == expected.shape);
    REQUIRE(it->data.size() == expected.data.size());
    CHECK(std::equal(it->data.begin(), it->data.end(), expected.data.begin()));
    CHECK(it->file == path);
  }
  uint64_t header_bytes = 0;
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&header_bytes), 8);
  CHECK(header_bytes % 8 == 0);  // padded with spaces so the data starts 8-byte aligned
  CHECK(fs::file_size(path) == 8 + header_bytes + 12 + 12 + 2);
}

TEST_CASE("safetensors: hostile or broken headers are refused with a precise message",
          "[safetensors]") {
  const std::string dir = testing::MakeTempDir("st-bad");

  SECTION("missing file") {
    CHECK_THAT(ErrorOf(dir + "/nope.safetensors"), Contains("nope.safetensors"));
  }
  SECTION("truncated: shorter than the length prefix") {
    const std::string path = dir + "/short.safetensors";
    std::ofstream(path, std::ios::binary) << "abc";
    CHECK_THAT(ErrorOf(path), Contains("short.safetensors") && Contains("truncated"));
  }
  SECTION("header length past the end") {
    const std::string path = WriteRaw(dir, "long.safetensors", "{}", 0, 1000);
    CHECK_THAT(ErrorOf(path), Contains("long.safetensors") && Contains("header length 1000") &&
                                  Contains("past the end"));
  }
  SECTION("absurd header length") {
    const std::string path = WriteRaw(dir, "huge.safetensors", "{}", 0, 1ull << 62);
    CHECK_THAT(ErrorOf(path), Contains("huge.safetensors") && Contains("limit"));
  }
  SECTION("malformed JSON reports the byte offset") {
    const std::string path = WriteRaw(dir, "json.safetensors", R"({"a": {"dtype": "F32",,}})", 0);
    CHECK_THAT(ErrorOf(path),
               Contains("json.safetensors") && Contains("malformed") && Contains("at byte 23"));
  }
  SECTION("overlapping offsets") {
    const std::string path =
        WriteRaw(dir, "overlap.safetensors",
                 R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                 R"( "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                 12);
    CHECK_THAT(ErrorOf(path), Contains("overlap.safetensors") && Contains("'y'") &&
                                  Contains("overlap tensor 'x'") && Contains("[4, 12]"));
  }
  SECTION("offsets past the end of the data") {
    const std::string path =
        WriteRaw(dir, "past.safetensors",
                 R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8);
    CHECK_THAT(ErrorOf(path), Contains("past.safetensors") && Contains("'w'") &&
                                  Contains("end 16") && Contains("past the end"));
  }
  SECTION("offsets that overflow 64 bits") {
    const std::string path = WriteRaw(
        dir, "wrap.safetensors",
        R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [18446744073709551615, 15]}})", 16);
    CHECK_THAT(ErrorOf(path),
               Contains("wrap.safetensors") && Contains("'w'") && Contains("after end"));
  }
  SECTION("a shape whose byte size overflows") {
    const std::string path = WriteRaw(
        dir, "shape.safetensors",
        R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0);
    CHECK_THAT(ErrorOf(path),
               Contains("shape.safetensors") && Contains("'w'") && Contains("overflows"));
  }
  SECTION("byte range that does not match shape × dtype") {
    const std::string path =
        WriteRaw(dir, "size.safetensors",
                 R"({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 8]}})", 8);
    CHECK_THAT(ErrorOf(path),
               Contains("size.safetensors") && Contains("'w'") && Contains("needs 6"));
  }
  SECTION("negative dimension") {
    const std::string path =
        WriteRaw(dir, "neg.safetensors",
                 R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", 0);
    CHECK_THAT(ErrorOf(path),
               Contains("neg.safetensors") && Contains("'w'") && Contains("non-negative"));
  }
  SECTION("unsupported dtype") {
    const std::string path =
        WriteRaw(dir, "i64.safetensors",
                 R"({"position_ids": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", 8);
    CHECK_THAT(ErrorOf(path), Contains("i64.safetensors") && Contains("'position_ids'") &&
                                  Contains("I64 is not supported"));
  }
  SECTION("missing field") {
    const std::string path =
        WriteRaw(dir, "field.safetensors", R"({"w": {"dtype": "F32", "shape": [1]}})", 4);
    CHECK_THAT(ErrorOf(path),
               Contains("field.safetensors") && Contains("'w'") && Contains("data_offsets"));
  }
}

TEST_CASE("SafetensorsCheckpoint reads an indexed, sharded checkpoint", "[safetensors]") {
  const std::string dir = testing::MakeTempDir("st-shards");
  WriteSafetensors(dir + "/model-00001-of-00002.safetensors",
                   {{"a", DType::kF32, {2}, testing::ToBytes({1, 2})},
                    {"b", DType::kF32, {1}, testing::ToBytes({3})}});
  WriteSafetensors(dir + "/model-00002-of-00002.safetensors",
                   {{"c", DType::kF16, {2, 2}, testing::ToBytes({1, 2, 3, 4}, DType::kF16)}});
  const std::string index = R"({"metadata": {"total_size": 20}, "weight_map": {
      "a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors"}})";
  std::ofstream(dir + "/model.safetensors.index.json") << index;

  SafetensorsCheckpoint checkpoint(dir);
  REQUIRE(checkpoint.all().size() == 3);
  CHECK(checkpoint.all()[0]->name == "a");
  CHECK(checkpoint.all()[2]->name == "c");
  REQUIRE(checkpoint.find("c") != nullptr);
  CHECK(checkpoint.find("c")->dtype == DType::kF16);
  CHECK_THAT(checkpoint.find("c")->file, Contains("model-00002-of-00002.safetensors"));

  SECTION("a tensor the index lists but its shard lacks") {
    std::ofstream(dir + "/model.safetensors.index.json", std::ios::trunc)
        << R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
               "d": "model-00002-of-00002.safetensors"}})";
    CHECK_THROWS_WITH(SafetensorsCheckpoint(dir), Contains("model.safetensors.index.json") &&
                                                      Contains("'d'") &&
                                                      Contains("model-00002-of-00002.safetensors"));
  }
  SECTION("the same tensor in two shards") {
    WriteSafetensors(dir + "/model-00002-of-00002.safetensors",
                     {{"a", DType::kF32, {2}, testing::ToBytes({1, 2})}});
    std::ofstream(dir + "/model.safetensors.index.json", std::ios::trunc)
        << R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
               "c": "model-00002-of-00002.safetensors"}})";
    CHECK_THROWS_WITH(SafetensorsCheckpoint(dir), Contains("'a'") && Contains("in both"));
  }
}

TEST_CASE("SafetensorsCheckpoint refuses shards outside the directory", "[safetensors]") {
  const std::string dir = testing::MakeTempDir("st-evil");
  for (const char* shard :
       {"../evil.safetensors", "/etc/evil.safetensors", "sub/../../evil.safetensors"}) {
    std::ofstream(dir + "/model.safetensors.index.json", std::ios::trunc)
        << R"({"weight_map": {"w": ")" << shard << R"("}})";
    CHECK_THROWS_WITH(SafetensorsCheckpoint(dir), Contains("model.safetensors.index.json") &&
                                                      Contains(shard) && Contains("outside"));
  }
}

TEST_CASE("SafetensorsCheckpoint refuses pickle checkpoints and empty directories",
          "[safetensors]") {
  const std::string dir = testing::MakeTempDir("st-pickle");
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir), Contains(dir) && Contains("model.safetensors"));
  std::ofstream(dir + "/pytorch_model.bin") << "not really a pickle";
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir),
                    Contains(dir) && Contains("pickle") && Contains("safe_serialization=True"));
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir + "/missing"), Contains("does not exist"));
}

}  // namespace zinf::formats
