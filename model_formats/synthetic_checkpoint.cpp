// WriteSyntheticCheckpoint: the converter's layout and writer, with a counter-based generator
// (SplitMix64 of seed, tensor and element index) instead of a source file — every byte depends only
// on the seed and its position, so two runs give identical files.
#include "model_formats/synthetic_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "engine/error.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "model_formats/manifest_json.h"
#include "model_formats/weights_writer.h"
#include "model_formats/zinf_format.h"

namespace zinf::formats {

namespace fs = std::filesystem;

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// How a tensor's values are drawn, from its canonical name and shape.
struct ValueRule {
  float center = 0;
  float half_width = 0;
};

ValueRule RuleFor(const TensorInfo& tensor) {
  const std::string& name = tensor.name;
  const bool is_norm = name.find("norm") != std::string::npos;
  if (is_norm && name.ends_with("_bias")) return {0.0f, 0.01f};
  if (is_norm) return {1.0f, 0.05f};
  if (name.ends_with("_bias")) return {0.0f, 0.02f};
  if (tensor.shape.size() == 2 && name != "token_embed" && name != "position_embed") {
    // ±1/sqrt(fan_in) keeps each projection's output at about the input's scale.
    return {0.0f, static_cast<float>(1.0 / std::sqrt(static_cast<double>(tensor.shape[1])))};
  }
  return {0.0f, 0.5f};  // embeddings
}

// Elements generated per step: bounded scratch whatever the tensor size.
constexpr size_t kChunkElements = size_t{1} << 20;

void ProduceTensor(const TensorInfo& tensor, uint64_t tensor_seed, const TensorSink& sink) {
  const ValueRule rule = RuleFor(tensor);
  const size_t count = static_cast<size_t>(tensor.num_elements());
  std::vector<float> values(std::min(count, kChunkElements));
  std::vector<std::byte> converted(values.size() * DTypeSize(tensor.dtype));
  for (size_t start = 0; start < count; start += values.size()) {
    const size_t n = std::min(values.size(), count - start);
    for (size_t i = 0; i < n; ++i) {
      // 24 random bits → uniform in [-1, 1).
      const double unit = static_cast<double>(SplitMix64(tensor_seed + start + i) >> 40) /
                              static_cast<double>(1 << 23) - 1.0;
      values[i] = rule.center + rule.half_width * static_cast<float>(unit);
    }
    ConvertFromF32(tensor.dtype, values.data(), converted.data(), n);
    sink(std::span<const std::byte>(converted.data(), n * DTypeSize(tensor.dtype)));
  }
}

}  // namespace

ConvertSummary WriteSyntheticCheckpoint(const std::string& config_json_path,
                                        const std::string& out_dir,
                                        const SyntheticOptions& options) {
  const fs::path out_path = fs::absolute(out_dir).lexically_normal();
  const fs::path manifest_path = out_path / kManifestFile;
  if (fs::exists(manifest_path) && !options.overwrite) {
    Fail("{} already holds a zinf checkpoint ({} exists); pass --force to replace it",
         out_path.string(), manifest_path.string());
  }
  Checkpoint checkpoint;
  checkpoint.config = LoadHfConfig(config_json_path);
  checkpoint.dtype = options.dtype;
  checkpoint.weights_file = kWeightsFile;
  checkpoint.extents = LayoutExtents(ExpectedExtents(checkpoint.config), options.dtype);

  fs::create_directories(out_path);
  fs::remove(manifest_path);  // the manifest is written last: it marks a complete checkpoint
  WriteWeightsFile(
      (out_path / kWeightsFile).string(), checkpoint.extents,
      [&](size_t extent_idx, size_t tensor_idx, const TensorSink& sink) {
        // Distinct, far-apart counter ranges per tensor.
        const uint64_t tensor_seed =
            SplitMix64(options.seed ^ (extent_idx << 40) ^ (tensor_idx << 32)) << 20;
        ProduceTensor(checkpoint.extents[extent_idx].tensors[tensor_idx], tensor_seed, sink);
      },
      options.progress);
  WriteManifestWithSource(out_path.string(), checkpoint,
                          {"synthetic:" + fs::path(config_json_path).filename().string(),
                           checkpoint.config.model_type});

  return SummarizeCheckpoint(checkpoint.extents);
}

}  // namespace zinf::formats
