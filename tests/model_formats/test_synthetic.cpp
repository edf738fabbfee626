// Synthetic checkpoints and the shipped configs/: shapes, determinism, and a loadable result.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/xxh3.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/hf_config.h"
#include "model_formats/synthetic_checkpoint.h"
#include "model_formats/zinf_format.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

// Parameters the canonical tensors hold, not counting the head's copy of tied embeddings.
double BillionsOfParameters(const ModelConfig& config) {
  double total = 0;
  for (const ExpectedExtent& extent : ExpectedExtents(config)) {
    for (const ExpectedTensor& tensor : extent.tensors) {
      if (tensor.name == "lm_head" && config.tie_word_embeddings) continue;
      double count = 1;
      for (int64_t dim : tensor.shape) count *= static_cast<double>(dim);
      total += count;
    }
  }
  return total / 1e9;
}

}  // namespace

TEST_CASE("every shipped config parses and has its model's published size") {
  // Published parameter counts, in billions; a shape typo moves these by far more than 3%.
  const std::map<std::string, double> published = {
      {"llama-2-7b", 6.74},
      {"llama-2-13b", 13.02},
      {"llama-2-70b", 68.98},
      {"llama-3.1-8b", 8.03},
      {"llama-3.1-70b", 70.55},
      {"llama-3.1-405b", 405.85},
      {"opt-1.3b", 1.32},
      {"opt-6.7b", 6.86},
      {"opt-30b", 30.0},
      {"opt-66b", 66.0},
      {"opt-175b", 175.0},
      {"qwen2.5-7b", 7.62},
      {"qwen2.5-72b", 72.71},
      {"mistral-7b", 7.24},
      // Mixtures of experts: all experts counted (the active share is far smaller).
      {"mixtral-8x7b", 46.70},
      {"mixtral-8x22b", 140.62},
      {"qwen1.5-moe-a2.7b", 14.32},
      {"qwen2-57b-a14b", 57.41},
      {"qwen3-30b-a3b", 30.53},
      {"qwen3-235b-a22b", 235.09}};
  const std::string dir = std::string(ZINF_SOURCE_DIR) + "/configs";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().stem().string();
    INFO(name);
    REQUIRE(published.count(name) == 1);
    const ModelConfig config = LoadHfConfig(entry.path().string());
    // OPT's tied 50272-row embedding is counted once; its position table adds ~0.0x B.
    CHECK(BillionsOfParameters(config) == Approx(published.at(name)).epsilon(0.03));
    ++checked;
  }
  CHECK(checked == static_cast<int>(published.size()));
}

TEST_CASE("a synthetic checkpoint loads, is deterministic in its seed, and honours --dtype") {
  const std::string config = std::string(ZINF_SOURCE_DIR) + "/models/stories260K/config.json";
  const std::string a = testing::MakeTempDir("synthetic-a");
  const std::string b = testing::MakeTempDir("synthetic-b");
  const std::string c = testing::MakeTempDir("synthetic-c");
  SyntheticOptions options;
  options.dtype = DType::kBF16;
  WriteSyntheticCheckpoint(config, a, options);
  WriteSyntheticCheckpoint(config, b, options);
  options.seed = 1;
  WriteSyntheticCheckpoint(config, c, options);

  const Checkpoint checkpoint = LoadCheckpoint(a);  // validates layout and shapes
  CHECK(checkpoint.dtype == DType::kBF16);
  CHECK(checkpoint.extents.size() == 7);
  CHECK_FALSE(checkpoint.tokenizer.has_value());
  CHECK(ReadAll(a + "/weights.bin") == ReadAll(b + "/weights.bin"));
  CHECK(ReadAll(a + "/weights.bin") != ReadAll(c + "/weights.bin"));
  CHECK_THROWS_WITH(WriteSyntheticCheckpoint(config, a, options), Catch::Contains("--force"));
}

TEST_CASE("extents produced on several threads give the same file and checksums as one thread") {
  const std::string config = std::string(ZINF_SOURCE_DIR) + "/models/stories260K/config.json";
  const std::string serial = testing::MakeTempDir("synthetic-serial");
  const std::string parallel = testing::MakeTempDir("synthetic-parallel");
  SyntheticOptions options;
  options.dtype = DType::kQ4;
  options.group_size = 32;
  WriteSyntheticCheckpoint(config, serial, options);
  options.producers = 3;
  std::vector<uint64_t> progress;
  options.progress = [&](uint64_t done, uint64_t) { progress.push_back(done); };
  WriteSyntheticCheckpoint(config, parallel, options);

  CHECK(ReadAll(serial + "/weights.bin") == ReadAll(parallel + "/weights.bin"));
  CHECK(ReadAll(serial + "/manifest.json") == ReadAll(parallel + "/manifest.json"));
  CHECK(LoadCheckpoint(parallel).extents.size() == 7);
  REQUIRE(progress.size() == 7);  // once per extent, in order
  CHECK(std::is_sorted(progress.begin(), progress.end()));
  // Each tensor's own checksum, what a layer read in parts is checked by, is of its bytes.
  const std::string weights = ReadAll(parallel + "/weights.bin");
  for (const ExtentInfo& extent : LoadCheckpoint(parallel).extents) {
    for (const TensorInfo& tensor : extent.tensors) {
      INFO(extent.name << " " << tensor.name);
      REQUIRE(tensor.xxh3.has_value());
      CHECK(*tensor.xxh3 == XXH3_64bits(weights.data() + extent.offset + tensor.offset_in_extent,
                                        tensor.size_bytes));
    }
  }
}

}  // namespace zinf::formats
