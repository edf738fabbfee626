// zinf convert HF_DIR OUT_DIR [--dtype f32|f16|bf16|int8|int4] [--group-size N] [--keep-float …]
// zinf convert --synthetic CONFIG.json OUT_DIR [--dtype …] [--seed N]
#include <spdlog/spdlog.h>

#include "cmd/commands.h"
#include "cmd/progress_bar.h"
#include "engine/error.h"
#include "model_formats/converter.h"
#include "model_formats/synthetic_checkpoint.h"
#include "model_formats/weight_encoding.h"

namespace zinf::cli {

namespace {

struct ConvertCommandOptions {
  std::vector<std::string> paths;  // HF_DIR OUT_DIR, or OUT_DIR with --synthetic
  std::string synthetic_config;
  std::string dtype;
  int group_size = 64;
  std::string keep_float;
  uint64_t seed = 0;
  bool force = false;
};

void RunConvert(const ConvertCommandOptions& options) {
  const bool synthetic = !options.synthetic_config.empty();
  const size_t expected_paths = synthetic ? 1 : 2;
  if (options.paths.size() != expected_paths) {
    Fail("usage: zinf convert HF_DIR OUT_DIR, or zinf convert --synthetic CONFIG.json OUT_DIR");
  }
  std::optional<DType> dtype;
  if (!options.dtype.empty()) {
    dtype = ParseDType(options.dtype);
    if (!dtype) Fail("--dtype: '{}' is not one of f32, f16, bf16, int8, int4", options.dtype);
  }
  const std::vector<std::string> keep_float = formats::ParseKeepFloat(options.keep_float);
  ProgressBar progress("converting", 1);
  auto on_progress = [&](uint64_t done, uint64_t total) {
    progress.SetTotal(total);
    progress.Update(done, fmt::format("{:.1f}/{:.1f} MiB", done / 1048576.0, total / 1048576.0));
  };
  const std::string& out_dir = options.paths.back();
  formats::ConvertSummary summary;
  if (synthetic) {
    formats::SyntheticOptions synthetic_options;
    if (dtype) synthetic_options.dtype = *dtype;
    synthetic_options.group_size = options.group_size;
    synthetic_options.keep_float = keep_float;
    synthetic_options.seed = options.seed;
    synthetic_options.overwrite = options.force;
    synthetic_options.progress = on_progress;
    summary =
        formats::WriteSyntheticCheckpoint(options.synthetic_config, out_dir, synthetic_options);
  } else {
    formats::ConvertOptions convert;
    convert.dtype = dtype;
    convert.group_size = options.group_size;
    convert.keep_float = keep_float;
    convert.overwrite = options.force;
    convert.progress = on_progress;
    summary = formats::ConvertCheckpoint(options.paths.front(), out_dir, convert);
  }
  progress.Finish();
  spdlog::info("wrote {}: {} tensors in {} extents, {:.1f} MiB{}", out_dir, summary.num_tensors,
               summary.num_extents, summary.weights_bytes / 1048576.0,
               synthetic ? " (synthetic weights)" : "");
}

}  // namespace

void AddConvertCommand(CLI::App& app) {
  auto options = std::make_shared<ConvertCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "convert", "Convert a Hugging Face checkpoint (config.json, *.safetensors, tokenizer) into "
                 "zinf's streaming format, or write a synthetic one from a config.json");
  command->add_option("paths", options->paths, "HF_DIR OUT_DIR (or OUT_DIR with --synthetic)")
      ->required()
      ->expected(1, 2);
  command->add_option("--synthetic", options->synthetic_config,
                      "write deterministic pseudo-random weights of this config.json's shape "
                      "(no download needed; for benchmarks)");
  command->add_option("--dtype", options->dtype,
                      "weight dtype: f32, f16 or bf16 (default: as stored; f16 for --synthetic); "
                      "int8 (per output row) or int4 (group-wise) quantizes the weight matrices "
                      "and keeps norms and biases as stored");
  command
      ->add_option("--group-size", options->group_size,
                   "int4: elements per group sharing a scale and minimum (32, 64 or 128)")
      ->capture_default_str();
  command->add_option("--keep-float", options->keep_float,
                      "matrices left unquantized: a comma list of embed, head, none, or "
                      "canonical names such as lm_head, down (default: none)");
  command->add_option("--seed", options->seed, "seed of the synthetic weights")
      ->capture_default_str();
  command->add_flag("--force", options->force, "overwrite an existing converted checkpoint");
  command->callback([options] { RunConvert(*options); });
}

}  // namespace zinf::cli
