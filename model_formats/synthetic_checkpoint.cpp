// WriteSyntheticCheckpoint: the converter's layout and writer, with a counter-based generator
// (SplitMix64 of seed, tensor and element index) instead of a source file — every byte depends only
// on the seed and its position, so two runs give identical files.
#include "model_formats/synthetic_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "engine/error.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "model_formats/manifest_json.h"
#include "model_formats/tensor_encoder.h"
#include "model_formats/weight_encoding.h"
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

void ProduceTensor(const TensorInfo& tensor, uint64_t tensor_seed, const TensorSink& sink) {
  const ValueRule rule = RuleFor(tensor);
  TensorEncoder encoder(tensor, sink);
  const int64_t cols = tensor.cols();
  std::vector<float> values(static_cast<size_t>(encoder.rows_per_chunk() * cols));
  for (int64_t row = 0; row < tensor.rows(); row += encoder.rows_per_chunk()) {
    const int64_t rows = std::min(encoder.rows_per_chunk(), tensor.rows() - row);
    const uint64_t start = static_cast<uint64_t>(row * cols);
    for (int64_t i = 0; i < rows * cols; ++i) {
      // 24 random bits → uniform in [-1, 1).
      const double unit = static_cast<double>(SplitMix64(tensor_seed + start + i) >> 40) /
                              static_cast<double>(1 << 23) -
                          1.0;
      values[i] = rule.center + rule.half_width * static_cast<float>(unit);
    }
    encoder.AddRows(values.data(), rows);
  }
  encoder.Finish();
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
  const WeightEncoding encoding = WeightEncoding::For(options.dtype, options.float_dtype,
                                                      options.group_size, options.keep_float);
  checkpoint.dtype = encoding.float_dtype;
  checkpoint.weights_file = kWeightsFile;
  checkpoint.extents = LayoutExtents(ExpectedExtents(checkpoint.config), encoding);

  OutputDirectory directory(out_path.string());
  fs::remove(manifest_path);  // the manifest is written last: it marks a complete checkpoint
  WriteWeightsFile((out_path / kWeightsFile).string(), checkpoint.extents,
                   [&](size_t extent_idx, size_t tensor_idx, const TensorSink& sink) {
                     // Distinct, far-apart counter ranges per tensor.
                     const uint64_t tensor_seed =
                         SplitMix64(options.seed ^ (extent_idx << 40) ^ (tensor_idx << 32)) << 20;
                     ProduceTensor(checkpoint.extents[extent_idx].tensors[tensor_idx], tensor_seed,
                                   sink);
                   },
                   options.progress, options.producers);
  WriteManifestWithSource(out_path.string(), checkpoint,
                          {"synthetic:" + fs::path(config_json_path).filename().string(),
                           checkpoint.config.model_type});

  directory.Keep();
  return SummarizeCheckpoint(checkpoint.extents);
}

}  // namespace zinf::formats
