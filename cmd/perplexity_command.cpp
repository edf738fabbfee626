// zinf perplexity --model DIR --text FILE [--context N] [--stride S]: the model's perplexity on a
// text and the tokens/s it ran at, so the cost of a quantization is a number (docs/quantization.md).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cmd/commands.h"
#include "cmd/engine_session.h"
#include "cmd/flag_checks.h"
#include "cmd/progress_bar.h"
#include "engine/error.h"
#include "engine/layer_parts.h"
#include "engine/perplexity.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

struct PerplexityCommandOptions {
  std::string model_dir;
  std::string text_path;
  int context = 0;  // 0: min(model's, 512)
  int stride = 0;   // 0: context / 2
  int step_tokens = 128;
  std::string json_path;
  SessionOptions session;
};

void RunPerplexity(PerplexityCommandOptions options) {
  const Checkpoint checkpoint = WithLayerParts(formats::LoadCheckpoint(options.model_dir));
  if (!checkpoint.tokenizer) {
    Fail("{} has no tokenizer, so a text cannot be scored; convert the model with its tokenizer",
         options.model_dir);
  }
  const std::unique_ptr<Tokenizer> tokenizer = formats::LoadCheckpointTokenizer(checkpoint);
  const std::string text = formats::ReadTextFile(options.text_path);
  const std::vector<TokenId> tokens = tokenizer->Encode(text, /*add_special=*/true);
  if (tokens.size() < 2)
    Fail("{}: the text has {} tokens; perplexity needs at least 2", options.text_path,
         tokens.size());

  PerplexityOptions measure;
  measure.context = options.context > 0 ? options.context
                                        : std::min(checkpoint.config.max_position_embeddings, 512);
  measure.stride = options.stride > 0 ? options.stride : std::max(1, measure.context / 2);
  SessionOptions& session = options.session;
  session.batch_size = 1;
  session.max_context = measure.context;
  session.step_tokens = options.step_tokens;
  session.logit_rows_per_step = options.step_tokens;
  EngineSession engine(checkpoint, session);
  spdlog::info("{}: {} tokens; context {}, stride {}; model {} ({}), backend {}", options.text_path,
               tokens.size(), measure.context, measure.stride, checkpoint.config.model_type,
               checkpoint.weights_description(), engine.backend_name());

  ProgressBar progress("scoring", 1);
  const auto start = std::chrono::steady_clock::now();
  const PerplexityResult result =
      MeasurePerplexity(engine.model(), tokens, measure, [&](int done, int total) {
        progress.SetTotal(total);
        progress.Update(done, fmt::format("window {}/{}", done, total));
      });
  progress.Finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double tokens_per_second = result.tokens_processed / seconds;
  fmt::print("perplexity {:.4f} ± {:.4f} over {} tokens ({} windows, context {}, stride {})\n",
             result.perplexity, result.standard_error, result.tokens_scored, result.windows,
             measure.context, measure.stride);
  fmt::print("speed      {:.1f} tokens/s ({} tokens through the model in {:.2f} s)\n",
             tokens_per_second, result.tokens_processed, seconds);
  if (!options.json_path.empty()) {
    const nlohmann::ordered_json json = {
        {"model", options.model_dir},
        {"weights", checkpoint.weights_description()},
        {"kv_dtype", std::string(DTypeName(session.kv_dtype))},
        {"text", options.text_path},
        {"context", measure.context},
        {"stride", measure.stride},
        {"perplexity", result.perplexity},
        {"standard_error", result.standard_error},
        {"mean_nll", result.mean_nll},
        {"tokens_scored", result.tokens_scored},
        {"windows", result.windows},
        {"tokens_per_second", tokens_per_second},
    };
    formats::WriteFileAtomically(options.json_path, json.dump(2) + "\n");
  }
}

}  // namespace

void AddPerplexityCommand(CLI::App& app) {
  auto options = std::make_shared<PerplexityCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "perplexity", "Perplexity of a converted model on a text file, and the tokens/s it ran at");
  command->add_option("--model", options->model_dir, "converted zinf checkpoint directory")
      ->required();
  command->add_option("--text", options->text_path, "UTF-8 text to score")->required();
  command
      ->add_option("--context", options->context,
                   "tokens per window (default: the model's context, at most 512)")
      ->check(IntAtLeast(2, "leave the flag out for the model's, at most 512"));
  command
      ->add_option("--stride", options->stride,
                   "tokens between window starts; each token is scored once (default: "
                   "context / 2, so every scored token has at least half a window of history)")
      ->check(IntAtLeast(1, "leave the flag out for context / 2"));
  command->add_option("--step-tokens", options->step_tokens, "tokens per forward step")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  command->add_option("--json", options->json_path, "also write the result as JSON here");
  SessionFlags flags;  // one sequence of --context positions in steps of --step-tokens
  flags.batch_size = flags.max_context = flags.step_tokens = flags.micro_batch_tokens = false;
  AddSessionOptions(command, options->session, flags);
  command->callback([options] { RunPerplexity(*options); });
}

}  // namespace zinf::cli
