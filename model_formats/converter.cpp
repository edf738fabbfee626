// zinf convert: maps and checks a Hugging Face checkpoint, then streams it extent by extent into
// weights.bin, copies the tokenizer, and writes manifest.json last (its presence marks the
// directory as a complete checkpoint).
#include "model_formats/converter.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/error.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "model_formats/hf_tensor_map.h"
#include "model_formats/manifest_json.h"
#include "model_formats/output_file.h"
#include "model_formats/safetensors.h"
#include "model_formats/weights_writer.h"
#include "model_formats/zinf_format.h"

namespace zinf::formats {

namespace fs = std::filesystem;

namespace {

// Elements converted per step when the dtype changes: 1 Mi elements keeps the scratch buffers at
// a few MiB however large the tensor is.
constexpr size_t kConvertChunkElements = size_t{1} << 20;

// Files of the Hugging Face directory the engine's tokenizer loaders read, copied when present.
constexpr const char* kTokenizerFiles[] = {"tokenizer.model", "tokenizer_config.json",
                                           "special_tokens_map.json", "tokenizer.json"};

// Writes `source`'s elements as `dtype`, converting through f32 in bounded chunks when needed.
void WriteTensor(const TensorSink& sink, const SafetensorsTensor& source, DType dtype) {
  if (source.dtype == dtype) {
    sink(source.data);
    return;
  }
  const size_t num_elements = source.data.size() / DTypeSize(source.dtype);
  std::vector<float> floats(std::min(num_elements, kConvertChunkElements));
  std::vector<std::byte> converted(floats.size() * DTypeSize(dtype));
  for (size_t start = 0; start < num_elements; start += floats.size()) {
    size_t count = std::min(floats.size(), num_elements - start);
    ConvertToF32(source.dtype, source.data.data() + start * DTypeSize(source.dtype), floats.data(),
                 count);
    if (dtype == DType::kF32) {
      sink(std::as_bytes(std::span<const float>(floats.data(), count)));
    } else {
      ConvertFromF32(dtype, floats.data(), converted.data(), count);
      sink(std::span<const std::byte>(converted.data(), count * DTypeSize(dtype)));
    }
  }
}

// add_bos_token / add_eos_token from tokenizer_config.json; absent or null keep the defaults.
void ReadTokenizerFlags(const fs::path& config_path, TokenizerSpec& spec) {
  if (!fs::exists(config_path)) return;
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(ReadTextFile(config_path.string()));
  } catch (const nlohmann::json::exception& error) {
    Fail("{}: malformed JSON: {}", config_path.string(), error.what());
  }
  auto read_flag = [&](const char* key, bool& flag) {
    if (!config.is_object() || !config.contains(key) || config[key].is_null()) return;
    if (!config[key].is_boolean())
      Fail("{}: '{}' must be true or false", config_path.string(), key);
    flag = config[key].get<bool>();
  };
  read_flag("add_bos_token", spec.add_bos);
  read_flag("add_eos_token", spec.add_eos);
}

std::optional<TokenizerSpec> DetectTokenizer(const fs::path& hf_dir) {
  TokenizerSpec spec;
  // tokenizer.json first: it is what the Hugging Face tokenizers library (the reference users
  // compare against) loads when a checkpoint ships both.
  if (fs::exists(hf_dir / "tokenizer.json")) {
    spec.kind = "hf-json";
    spec.file = "tokenizer.json";
  } else if (fs::exists(hf_dir / "tokenizer.model")) {
    spec.kind = "sentencepiece";
    spec.file = "tokenizer.model";
  } else {
    spdlog::warn(
        "{} has no tokenizer.model or tokenizer.json: the checkpoint will have no "
        "tokenizer, so prompts must be given as token ids",
        hf_dir.string());
    return std::nullopt;
  }
  ReadTokenizerFlags(hf_dir / "tokenizer_config.json", spec);
  return spec;
}

void CopyTokenizerFiles(const fs::path& hf_dir, const fs::path& out_dir) {
  for (const char* name : kTokenizerFiles) {
    if (!fs::exists(hf_dir / name)) continue;
    std::error_code error;
    fs::copy_file(hf_dir / name, out_dir / name, fs::copy_options::overwrite_existing, error);
    if (error)
      Fail("cannot copy {} to {}: {}", (hf_dir / name).string(), out_dir.string(), error.message());
  }
}

// The checkpoint's dtype: the one asked for, else the source tensors' own, else f32 when they mix.
DType ChooseDType(const ConvertOptions& options, const ConversionPlan& plan) {
  if (options.dtype) return *options.dtype;
  if (plan.source_dtype) return *plan.source_dtype;
  spdlog::warn("the checkpoint mixes tensor dtypes; writing f32 (pass --dtype to choose)");
  return DType::kF32;
}

ConvertSummary Convert(const fs::path& hf_dir, const fs::path& out_dir,
                       const ConvertOptions& options) {
  const fs::path manifest_path = out_dir / kManifestFile;
  if (fs::exists(manifest_path) && !options.overwrite) {
    Fail("{} already holds a zinf checkpoint ({} exists); pass --force to replace it",
         out_dir.string(), manifest_path.string());
  }
  if (fs::exists(out_dir) && fs::equivalent(out_dir, hf_dir)) {
    Fail("the output directory {} is the Hugging Face directory; choose another", out_dir.string());
  }

  Checkpoint checkpoint;
  checkpoint.config = LoadHfConfig((hf_dir / "config.json").string());
  SafetensorsCheckpoint source(hf_dir.string());
  ConversionPlan plan = PlanConversion(checkpoint.config, source);
  checkpoint.dtype = ChooseDType(options, plan);
  checkpoint.tokenizer = DetectTokenizer(hf_dir);
  checkpoint.weights_file = kWeightsFile;
  std::vector<ExpectedExtent> layouts;
  for (const PlannedExtent& planned : plan.extents) layouts.push_back(planned.layout);
  checkpoint.extents = LayoutExtents(layouts, checkpoint.dtype);

  fs::create_directories(out_dir);
  // The manifest is the commit point: remove the old one first, so a conversion cut short leaves
  // a directory that is plainly not a checkpoint rather than an old manifest over new weights.
  fs::remove(manifest_path);
  WriteWeightsFile(
      (out_dir / kWeightsFile).string(), checkpoint.extents,
      [&](size_t extent_idx, size_t tensor_idx, const TensorSink& sink) {
        WriteTensor(sink, *plan.extents[extent_idx].sources[tensor_idx],
                    checkpoint.extents[extent_idx].tensors[tensor_idx].dtype);
      },
      options.progress);
  CopyTokenizerFiles(hf_dir, out_dir);
  WriteManifestWithSource(out_dir.string(), checkpoint,
                          {hf_dir.filename().string(), checkpoint.config.model_type});

  return SummarizeCheckpoint(checkpoint.extents);
}

}  // namespace

ConvertSummary SummarizeCheckpoint(const std::vector<ExtentInfo>& extents) {
  ConvertSummary summary;
  summary.num_extents = static_cast<int>(extents.size());
  for (const ExtentInfo& extent : extents) summary.num_tensors += static_cast<int>(extent.tensors.size());
  summary.weights_bytes = PaddedFileBytes(extents);
  return summary;
}

ConvertSummary ConvertCheckpoint(const std::string& hf_dir, const std::string& out_dir,
                                 const ConvertOptions& options) {
  // Normalised absolute paths: "dir/" and "dir" name the same directory and basename.
  fs::path hf_path = fs::absolute(hf_dir).lexically_normal();
  fs::path out_path = fs::absolute(out_dir).lexically_normal();
  if (!hf_path.has_filename()) hf_path = hf_path.parent_path();
  if (!out_path.has_filename()) out_path = out_path.parent_path();
  try {
    return Convert(hf_path, out_path, options);
  } catch (const fs::filesystem_error& error) {
    Fail("zinf convert {} → {}: {}", hf_dir, out_dir, error.what());
  } catch (const Error& error) {
    Rethrow(error, fmt::format("zinf convert {}", hf_dir));
  }
}

}  // namespace zinf::formats
