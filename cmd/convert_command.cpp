// zinf convert HF_DIR OUT_DIR [--dtype f32|f16|bf16] [--force]
#include <spdlog/spdlog.h>

#include "cmd/commands.h"
#include "cmd/progress_bar.h"
#include "engine/error.h"
#include "model_formats/converter.h"

namespace zinf::cli {

namespace {

struct ConvertCommandOptions {
  std::string hf_dir;
  std::string out_dir;
  std::string dtype;
  bool force = false;
};

void RunConvert(const ConvertCommandOptions& options) {
  formats::ConvertOptions convert;
  if (!options.dtype.empty()) {
    convert.dtype = ParseDType(options.dtype);
    if (!convert.dtype) Fail("--dtype: '{}' is not one of f32, f16, bf16", options.dtype);
  }
  convert.overwrite = options.force;
  ProgressBar progress("converting", 1);
  convert.progress = [&](uint64_t done, uint64_t total) {
    progress.SetTotal(total);
    progress.Update(done, fmt::format("{:.1f}/{:.1f} MiB", done / 1048576.0, total / 1048576.0));
  };
  const formats::ConvertSummary summary =
      formats::ConvertCheckpoint(options.hf_dir, options.out_dir, convert);
  progress.Finish();
  spdlog::info("converted {} -> {}: {} tensors in {} extents, {:.1f} MiB", options.hf_dir,
               options.out_dir, summary.num_tensors, summary.num_extents,
               summary.weights_bytes / 1048576.0);
}

}  // namespace

void AddConvertCommand(CLI::App& app) {
  auto options = std::make_shared<ConvertCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "convert", "Convert a Hugging Face checkpoint (config.json, *.safetensors, tokenizer) into "
                 "zinf's streaming format");
  command->add_option("hf_dir", options->hf_dir, "Hugging Face model directory")->required();
  command->add_option("out_dir", options->out_dir, "output directory")->required();
  command->add_option("--dtype", options->dtype, "weight dtype: f32, f16 or bf16 (default: as stored)");
  command->add_flag("--force", options->force, "overwrite an existing converted checkpoint");
  command->callback([options] { RunConvert(*options); });
}

}  // namespace zinf::cli
