// zinf generate --model DIR --prompts FILE [--out FILE]: batched generation over a prompt file,
// one JSONL line per request written as each finishes.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <thread>

#include "cmd/commands.h"
#include "cmd/interrupt.h"
#include "cmd/output_file.h"
#include "cmd/progress_bar.h"
#include "cmd/prompt_file.h"
#include "engine/cpu_backend.h"
#include "engine/error.h"
#include "engine/generator.h"
#include "io/weight_source_factory.h"
#include "model_formats/tokenizer_loader.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

struct GenerateOptions {
  std::string model_dir;
  std::string prompts;
  std::string out = "-";
  bool resume = false;
  bool skip_bad_lines = false;
  bool print = false;
  int batch_size = 8;
  int max_context = 0;  // 0: the model's max_position_embeddings, capped at kDefaultMaxContext
  int step_tokens = 512;
  int threads = 0;
  std::string weights = "resident";
  int prefetch_depth = 1;
  Request defaults;
};

// Without --max-context, long-context models get this many positions per sequence, so the KV
// cache of a large batch stays within DRAM.
constexpr int kDefaultMaxContext = 4096;

struct Job {
  std::deque<Request> pending;
  std::vector<std::string> prompt_texts;  // by request index, for --print
  size_t total = 0;
};

// Turns prompt-file entries into requests, skipping those already in the output; entries that
// cannot run are written to the output as errors right away.
Job PrepareJob(const std::vector<PromptEntry>& entries, const Tokenizer* tokenizer,
               const Request& defaults, OutputFile& output) {
  Job job;
  for (const PromptEntry& entry : entries) {
    if (output.done_ids().contains(entry.id)) continue;
    ++job.total;
    if (!entry.error.empty()) {
      spdlog::warn("request {} (line {}): {}", entry.id, entry.line, entry.error);
      output.AppendError(entry.id, entry.line, entry.error);
      continue;
    }
    Request request = RequestFor(entry, defaults);
    if (entry.text) {
      if (tokenizer == nullptr) {
        Fail("line {}: a text prompt needs a tokenizer, and this checkpoint has none; give "
             "\"prompt_ids\" instead",
             entry.line);
      }
      request.prompt_ids = tokenizer->Encode(*entry.text, /*add_special=*/true);
    }
    job.pending.push_back(std::move(request));
  }
  return job;
}

io::WeightPlacement ParsePlacement(const std::string& name) {
  if (name == "resident") return io::WeightPlacement::kResident;
  if (name == "stream") return io::WeightPlacement::kStreamed;
  Fail("--weights: '{}' is not one of resident, stream", name);
}

void LogSummary(const GenerationStats& stats, const WeightIoStats& io, double seconds) {
  auto rate = [](double count, double secs) { return secs > 0 ? count / secs : 0.0; };
  spdlog::info(
      "done: {} requests ({} failed) in {:.2f} s | prefill {} tok, {:.1f} tok/s | decode {} tok, "
      "{:.1f} tok/s | read {:.1f} MiB from the weights file ({} extents, {:.2f} s waiting)",
      stats.completed, stats.failed, seconds, stats.prompt_tokens,
      rate(stats.prompt_tokens, stats.prefill_seconds), stats.generated_tokens,
      rate(stats.generated_tokens, stats.prefill_seconds + stats.decode_seconds),
      io.bytes_read / 1048576.0, io.extents_read, io.read_wait_seconds);
}

void RunGenerate(GenerateOptions options) {
  const auto start = std::chrono::steady_clock::now();
  const Checkpoint checkpoint = formats::LoadCheckpoint(options.model_dir);
  std::unique_ptr<Tokenizer> tokenizer;
  if (checkpoint.tokenizer) tokenizer = formats::LoadCheckpointTokenizer(checkpoint);

  const std::vector<PromptEntry> entries =
      ReadPromptFile(options.prompts, PromptFileOptions{options.skip_bad_lines});
  OutputFile output(options.out, options.resume);
  Job job = PrepareJob(entries, tokenizer.get(), options.defaults, output);
  if (!output.done_ids().empty()) {
    spdlog::info("resuming: {} requests already in {}, {} to go", output.done_ids().size(),
                 output.path(), job.total);
  }

  if (options.batch_size < 1) Fail("--batch-size must be at least 1, got {}", options.batch_size);
  ModelLimits limits;
  limits.max_sequences = options.batch_size;
  limits.max_context = options.max_context > 0
                           ? options.max_context
                           : std::min(checkpoint.config.max_position_embeddings, kDefaultMaxContext);
  limits.max_tokens_per_step = std::max(options.step_tokens, options.batch_size);

  io::WeightSourceOptions source_options;
  source_options.placement = ParsePlacement(options.weights);
  source_options.prefetch_depth = options.prefetch_depth;
  std::unique_ptr<WeightSource> weights = io::OpenWeightSource(checkpoint, source_options);
  const int threads = options.threads > 0 ? options.threads
                                          : static_cast<int>(std::thread::hardware_concurrency());
  CpuBackend backend(threads);
  Model model(checkpoint, backend, *weights, limits);
  spdlog::info("model {} ({} layers, {}), backend {}, weights {} (prefetch depth {}), batch {}, "
               "context {}",
               checkpoint.config.model_type, checkpoint.config.num_layers,
               DTypeName(checkpoint.dtype), backend.name(), options.weights,
               options.prefetch_depth, limits.max_sequences, limits.max_context);

  GeneratorOptions generator_options;
  generator_options.eos_ids = checkpoint.config.eos_token_ids;
  Generator generator(model, tokenizer.get(), generator_options);
  ProgressBar progress("generating", job.total);
  size_t finished = 0;
  GeneratorCallbacks callbacks;
  callbacks.next_request = [&]() -> std::optional<Request> {
    if (job.pending.empty()) return std::nullopt;
    Request request = std::move(job.pending.front());
    job.pending.pop_front();
    return request;
  };
  callbacks.on_complete = [&](const Request& request, Completion&& completion) {
    output.Append(completion, AppendExtras{request.line_number});
    if (options.print) {
      fmt::print("[{}] {}\n", completion.id, completion.text);
      std::fflush(stdout);
    }
    progress.Update(++finished);
  };
  callbacks.on_error = [&](const Request& request, const std::string& message) {
    spdlog::warn("request {} (line {}): {}", request.id, request.line_number, message);
    output.AppendError(request.id, request.line_number, message);
    progress.Update(++finished);
  };
  callbacks.on_step = [&](const GenerationStats& stats) {
    progress.Update(finished, fmt::format("{} tok generated", stats.generated_tokens));
  };
  const std::atomic<bool>* interrupted = InstallInterruptFlag();
  generator.Run(callbacks, interrupted);
  progress.Finish();

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LogSummary(generator.stats(), weights->stats(), seconds);
  if (interrupted->load()) {
    spdlog::warn("interrupted: {} finished requests are in {}; rerun with --resume to finish the "
                 "other {}",
                 finished, output.path(), job.total - finished);
    g_exit_code = 130;
  }
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* command = app.add_subcommand("generate", "Generate continuations for a prompt file");
  command->add_option("--model", options->model_dir, "converted zinf checkpoint directory")
      ->required();
  command->add_option("--prompts", options->prompts,
                      ".txt (one prompt per line) or .jsonl ({\"id\", \"prompt\" or "
                      "\"prompt_ids\", per-request settings})")
      ->required();
  command->add_option("--out", options->out, "JSONL output file, '-' for stdout")
      ->capture_default_str();
  command->add_flag("--resume", options->resume, "skip requests already in --out, append the rest");
  command->add_flag("--skip-bad-lines", options->skip_bad_lines,
                    "log and skip malformed prompt lines instead of failing");
  command->add_flag("--print", options->print, "also print each result's text to stdout");
  command->add_option("--batch-size", options->batch_size, "sequences generated at once")
      ->capture_default_str();
  command->add_option("--max-context", options->max_context,
                      "positions per sequence (default: the model's, at most 4096)");
  command->add_option("--step-tokens", options->step_tokens,
                      "most tokens per forward step (prompt chunks plus decode tokens)")
      ->capture_default_str();
  command->add_option("--threads", options->threads, "CPU threads (default: all cores)");
  command->add_option("--weights", options->weights,
                      "resident (read once) or stream (re-read every step)")
      ->capture_default_str();
  command->add_option("--prefetch-depth", options->prefetch_depth,
                      "extents read ahead while one computes (streamed weights)")
      ->capture_default_str();
  Request& d = options->defaults;
  command->add_option("--max-new-tokens", d.max_new_tokens)->capture_default_str();
  command->add_option("--temperature", d.sampling.temperature, "0 is greedy")
      ->capture_default_str();
  command->add_option("--top-k", d.sampling.top_k, "0 is off")->capture_default_str();
  command->add_option("--top-p", d.sampling.top_p)->capture_default_str();
  command->add_option("--min-p", d.sampling.min_p)->capture_default_str();
  command->add_option("--repetition-penalty", d.sampling.repetition_penalty)
      ->capture_default_str();
  command->add_option("--seed", d.sampling.seed)->capture_default_str();
  command->add_option("--stop", d.stop, "stop string (repeatable)");
  command->add_flag("--ignore-eos", d.ignore_eos, "keep generating to max-new-tokens");
  command->add_option("--logprobs", d.logprobs,
                      "N: log-probability of each chosen token plus the top N");
  command->callback([options] { RunGenerate(*options); });
}

}  // namespace zinf::cli
