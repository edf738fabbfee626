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
#include "model_formats/atomic_output_file.h"
#include "model_formats/extent_layout.h"
#include "model_formats/generation_config.h"
#include "model_formats/hf_config.h"
#include "model_formats/hf_tensor_map.h"
#include "model_formats/manifest_json.h"
#include "model_formats/safetensors.h"
#include "model_formats/tensor_encoder.h"
#include "model_formats/weight_encoding.h"
#include "model_formats/weights_writer.h"
#include "model_formats/zinf_format.h"

namespace zinf::formats {

namespace fs = std::filesystem;

namespace {

// Files of the Hugging Face directory the engine's tokenizer and chat-template loaders read
// (model_formats/checkpoint_chat_template.h), copied when present; generation_config.json too,
// for the record (its stop tokens are merged into the manifest).
constexpr const char* kTokenizerFiles[] = {
    "tokenizer.model",     "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json",
    "chat_template.jinja", "chat_template.json",    "generation_config.json"};

// Writes `source` in the tensor's stored dtype: bytes as they are when nothing changes, else
// through f32 rows a chunk at a time, so scratch memory stays bounded whatever the tensor size.
void WriteTensor(const TensorSink& sink, const SafetensorsTensor& source,
                 const TensorInfo& tensor) {
  if (source.dtype == tensor.dtype) {
    sink(source.data);
    return;
  }
  TensorEncoder encoder(tensor, sink);
  const int64_t cols = tensor.cols();
  const size_t source_row_bytes = static_cast<size_t>(cols) * DTypeSize(source.dtype);
  std::vector<float> floats(static_cast<size_t>(encoder.rows_per_chunk() * cols));
  for (int64_t row = 0; row < tensor.rows(); row += encoder.rows_per_chunk()) {
    const int64_t count = std::min(encoder.rows_per_chunk(), tensor.rows() - row);
    ConvertToF32(source.dtype, source.data.data() + static_cast<size_t>(row) * source_row_bytes,
                 floats.data(), static_cast<size_t>(count * cols));
    encoder.AddRows(floats.data(), count);
  }
  encoder.Finish();
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
    spdlog::warn("{} has no tokenizer.model or tokenizer.json: the checkpoint will have no "
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

// The dtypes to write: the one asked for (int8/int4: for the matrices), else — and for the
// tensors a quantized checkpoint keeps in floating point — the source tensors' own, else f32
// when they mix.
WeightEncoding ChooseEncoding(const ConvertOptions& options, const ConversionPlan& plan) {
  DType source_dtype = DType::kF32;
  if (plan.source_dtype) {
    source_dtype = *plan.source_dtype;
  } else if (!options.dtype || IsQuantized(*options.dtype)) {
    spdlog::warn("the checkpoint mixes tensor dtypes; writing f32 (pass --dtype to choose)");
  }
  const DType dtype = options.dtype.value_or(source_dtype);
  return WeightEncoding::For(dtype, source_dtype, options.group_size, options.keep_float);
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
  // Instruct models end a turn with a token the base config may not list (Llama-3's <|eot_id|>);
  // generation stops at each of them, as transformers' generate() does.
  AppendMissingIds(GenerationConfigEosIds(hf_dir / "generation_config.json"),
                   checkpoint.config.eos_token_ids);
  SafetensorsCheckpoint source(hf_dir.string());
  ConversionPlan plan = PlanConversion(checkpoint.config, source);
  const WeightEncoding encoding = ChooseEncoding(options, plan);
  checkpoint.dtype = encoding.float_dtype;
  checkpoint.tokenizer = DetectTokenizer(hf_dir);
  checkpoint.weights_file = kWeightsFile;
  std::vector<ExpectedExtent> layouts;
  for (const PlannedExtent& planned : plan.extents) layouts.push_back(planned.layout);
  checkpoint.extents = LayoutExtents(layouts, encoding);

  OutputDirectory directory(out_dir.string());
  // The manifest is the commit point: remove the old one first, so a conversion cut short leaves
  // a directory that is plainly not a checkpoint rather than an old manifest over new weights.
  fs::remove(manifest_path);
  WriteWeightsFile((out_dir / kWeightsFile).string(), checkpoint.extents,
                   [&](size_t extent_idx, size_t tensor_idx, const TensorSink& sink) {
                     WriteTensor(sink, *plan.extents[extent_idx].sources[tensor_idx],
                                 checkpoint.extents[extent_idx].tensors[tensor_idx]);
                   },
                   options.progress);
  CopyTokenizerFiles(hf_dir, out_dir);
  WriteManifestWithSource(out_dir.string(), checkpoint,
                          {hf_dir.filename().string(), checkpoint.config.model_type});

  directory.Keep();
  return SummarizeCheckpoint(checkpoint.extents);
}

}  // namespace

ConvertSummary SummarizeCheckpoint(const std::vector<ExtentInfo>& extents) {
  ConvertSummary summary;
  summary.num_extents = static_cast<int>(extents.size());
  for (const ExtentInfo& extent : extents)
    summary.num_tensors += static_cast<int>(extent.tensors.size());
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
