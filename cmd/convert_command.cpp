// zinf convert SRC DST [--dtype f32|f16|bf16|int8|int4] [--group-size N] [--keep-float …]
// zinf convert --synthetic CONFIG.json DST [--dtype …] [--seed N]
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "cmd/commands.h"
#include "cmd/flag_checks.h"
#include "cmd/progress_bar.h"
#include "engine/error.h"
#include "model_formats/converter.h"
#include "model_formats/synthetic_checkpoint.h"
#include "model_formats/weight_encoding.h"

namespace zinf::cli {

namespace {

struct ConvertCommandOptions {
  std::string src;  // the Hugging Face directory; none with --synthetic
  std::string dst;
  std::string synthetic_config;
  std::string dtype;
  int group_size = 64;
  std::string keep_float;
  uint64_t seed = 0;
  bool force = false;
};

// The positionals as given: SRC DST, or DST alone with --synthetic (CLI11 fills SRC first, so a
// lone path moves to DST). A mistake is a usage error, exit 2, like those CLI11 finds itself.
void ResolvePaths(ConvertCommandOptions& options) {
  constexpr const char* kUsage =
      "zinf convert SRC DST, or zinf convert --synthetic CONFIG.json DST";
  const bool synthetic = !options.synthetic_config.empty();
  if (synthetic) {
    if (!options.dst.empty()) {
      throw CLI::ValidationError(fmt::format(
          "--synthetic writes weights of CONFIG.json's shape into DST, so it takes no SRC ({})",
          kUsage));
    }
    std::swap(options.src, options.dst);
  }
  if ((options.src.empty() && !synthetic) || options.dst.empty()) {
    throw CLI::RequiredError(
        fmt::format("convert needs {} ({})", synthetic ? "DST" : "SRC and DST", kUsage),
        CLI::ExitCodes::RequiredError);
  }
}

void RunConvert(ConvertCommandOptions options) {
  ResolvePaths(options);
  const bool synthetic = !options.synthetic_config.empty();
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
  const std::string& out_dir = options.dst;
  formats::ConvertSummary summary;
  if (synthetic) {
    formats::SyntheticOptions synthetic_options;
    if (dtype) synthetic_options.dtype = *dtype;
    synthetic_options.group_size = options.group_size;
    synthetic_options.keep_float = keep_float;
    synthetic_options.seed = options.seed;
    synthetic_options.overwrite = options.force;
    synthetic_options.producers =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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
    summary = formats::ConvertCheckpoint(options.src, out_dir, convert);
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
  // Both optional to CLI11, which would fill SRC with the lone path of `--synthetic CONFIG DST`;
  // ResolvePaths sorts them out.
  command->add_option("SRC", options->src,
                      "Hugging Face checkpoint directory (config.json, *.safetensors, "
                      "tokenizer); left out with --synthetic");
  command->add_option("DST", options->dst, "directory to write the zinf checkpoint into");
  command->add_option("--synthetic", options->synthetic_config,
                      "write deterministic pseudo-random weights of this config.json's shape "
                      "into DST (no download needed; for benchmarks)");
  command
      ->add_option("--dtype", options->dtype,
                   "weight dtype: f32, f16 or bf16 (default: as stored; f16 for --synthetic); "
                   "int8 (per output row) or int4 (group-wise) quantizes the weight matrices "
                   "and keeps norms and biases as stored")
      ->check(OneOf({"f32", "f16", "bf16", "int8", "int4"}));
  command
      ->add_option("--group-size", options->group_size,
                   "int4: weights per group sharing a scale and minimum (32, 64 or 128)")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  command->add_option("--keep-float", options->keep_float,
                      "matrices left unquantized: a comma list of embed, head, none, or "
                      "canonical names such as lm_head, down (default: none)");
  command
      ->add_option("--seed", options->seed,
                   "seed of the synthetic weights, an integer in [0, 2^64)")
      ->capture_default_str()
      ->check(UnsignedInt());
  command->add_flag("--force", options->force, "overwrite an existing converted checkpoint");
  command->callback([options] { RunConvert(*options); });
}

}  // namespace zinf::cli
