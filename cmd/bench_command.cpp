// zinf bench --model DIR: sweeps batch size, prompt and generation length, placement and prefetch
// depth (comma lists, like llama-bench), repeats each configuration, and reports mean ± sd.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "cmd/bench_plot.h"
#include "cmd/bench_report.h"
#include "cmd/commands.h"
#include "cmd/engine_session.h"
#include "cmd/flag_checks.h"
#include "cmd/machine_description.h"
#include "cmd/plot_file.h"
#include "cuda/cuda_backend.h"
#include "engine/error.h"
#include "engine/generator.h"
#include "engine/layer_parts.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

// Large enough that a copy runs at the link's sustained rate (copies of an extent are 10s–100s of
// MiB too).
constexpr uint64_t kPinnedProbeBytes = uint64_t{256} << 20;

struct BenchOptions {
  std::string model_dir;
  std::vector<std::string> batch_sizes = {"1", "4", "16"};  // or "auto"
  std::vector<std::string> prompt_lens = {"32"};  // "N", or "A:B" for lengths drawn from [A, B]
  std::vector<std::string> gen_lens = {"32"};
  std::vector<std::string> weights = {"auto"};
  std::vector<int> prefetch_depths = {-1};
  std::vector<std::string> refills = {"continuous"};
  int num_prompts = 0;  // 0: one batch
  int repeats = 3;
  // The shared flags bench does not sweep (threads, KV dtype, budgets, step, device).
  SessionOptions session;
  std::string csv_path, json_path, plot_path;
};

// A length, or a range of lengths a mixed workload draws from.
struct LengthRange {
  int low = 0, high = 0;
  std::string text;
};

LengthRange ParseLength(const std::string& text, const char* option) {
  LengthRange range{0, 0, text};
  const size_t colon = text.find(':');
  try {
    range.low = std::stoi(text.substr(0, colon));
    range.high = colon == std::string::npos ? range.low : std::stoi(text.substr(colon + 1));
  } catch (const std::exception&) {
    Fail("{}: '{}' is not a length N or a range A:B", option, text);
  }
  if (range.low < 1 || range.high < range.low) Fail("{}: '{}' is not a valid length", option, text);
  return range;
}

// Deterministic prompts of ids in [3, vocab), lengths drawn uniformly from the ranges: the same
// requests for every configuration, so rows compare the engine, not the workload.
std::vector<Request> SyntheticRequests(int count, LengthRange prompt, LengthRange gen, int vocab) {
  std::mt19937_64 rng(12345);
  auto draw = [&](LengthRange range) {
    return range.low + static_cast<int>(rng() % (range.high - range.low + 1));
  };
  std::vector<Request> requests;
  for (int i = 0; i < count; ++i) {
    Request request;
    request.id = std::to_string(i);
    const int length = draw(prompt);
    for (int t = 0; t < length; ++t) {
      request.prompt_ids.push_back(static_cast<TokenId>(3 + rng() % (vocab - 3)));
    }
    request.max_new_tokens = draw(gen);
    request.ignore_eos = true;
    requests.push_back(std::move(request));
  }
  return requests;
}

struct RunResult {
  double prefill_tokens_per_s, decode_tokens_per_s, generation_tokens_per_s, disk_gbps;
  int batch_size;  // as run: auto's choice when auto
  double predicted_decode_tokens_per_s;
  std::string bound;
  // GPU runs: weights crossing PCIe every step, and the copy engine's rate and busy share.
  double moved_bytes_per_step = 0, h2d_gbps = 0, copy_busy_percent = 0;
  double decode_batch = 0;  // sequences a decode-only step carried, on average
};

RunResult RunOnce(const Checkpoint& checkpoint, const SessionOptions& session_options,
                  Refill refill, const std::vector<Request>& requests) {
  EngineSession session(checkpoint, session_options);
  const uint64_t bytes_before = session.weights().stats().bytes_read;  // the resident load
  GeneratorOptions options;
  options.refill = refill;
  Generator generator(session.model(), nullptr, options);
  size_t next = 0;
  GeneratorCallbacks callbacks;
  callbacks.next_request = [&]() -> std::optional<Request> {
    if (next == requests.size()) return std::nullopt;
    return requests[next++];
  };
  callbacks.on_complete = [](const Request&, Completion&&) {};
  callbacks.on_error = [](const Request& request, const std::string& message) {
    Fail("bench request {}: {}", request.id, message);
  };
  const TransferStats copies_before = session.transfer_stats();  // the resident uploads
  const auto start = std::chrono::steady_clock::now();
  generator.Run(callbacks, nullptr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const GenerationStats& stats = generator.stats();
  const double streamed = session.weights().stats().bytes_read - bytes_before;
  const TransferStats copies = session.transfer_stats();
  const double copy_seconds = copies.copy_seconds - copies_before.copy_seconds;
  auto rate = [](double n, double s) { return s > 0 ? n / s : 0.0; };
  RunResult result{
      rate(stats.prompt_tokens, stats.prefill_seconds),
      rate(stats.generated_tokens - stats.prefill_steps_generated, stats.decode_seconds),
      rate(stats.generated_tokens, seconds),
      rate(streamed / 1e9, seconds),
      session.limits().max_sequences,
      session.plan().predicted_tokens_per_s,
      BoundName(session.plan().bound)};
  const int64_t decode_tokens = stats.generated_tokens - stats.prefill_steps_generated;
  result.decode_batch =
      rate(static_cast<double>(decode_tokens), static_cast<double>(stats.decode_steps));
  if (session.plan().on_cuda()) {
    result.moved_bytes_per_step =
        static_cast<double>(session.plan().pinned_bytes + session.plan().streamed_bytes_per_step);
    result.h2d_gbps = rate((copies.bytes - copies_before.bytes) / 1e9, copy_seconds);
    result.copy_busy_percent = 100 * rate(copy_seconds, seconds);
  }
  return result;
}

// Decode steps that carried well under the batch: say why, since the bounds assume a full batch.
void WarnIfStaggered(const BenchRow& row) {
  if (row.decode_batch.mean <= 0 || row.decode_batch.mean >= 0.9 * row.batch_size) return;
  spdlog::info(
      "batch {}: decode steps carried {:.1f} sequences on average; sequences that start decoding "
      "on different steps (their prompts prefilled over several steps: raise --step-tokens to "
      "batch × prompt length) or finish on different steps leave the last decode steps part-empty",
      row.batch_size, row.decode_batch.mean);
}

// Runs one configuration `row.repeats` times and fills in its measurements.
void MeasureRow(const Checkpoint& checkpoint, const SessionOptions& session, Refill refill,
                const std::vector<Request>& requests, BenchRow& row) {
  std::vector<double> prefill, decode, generation, disk, h2d, busy, decode_batch;
  for (int r = 0; r < row.repeats; ++r) {
    const RunResult result = RunOnce(checkpoint, session, refill, requests);
    row.batch_size = result.batch_size;
    row.predicted_decode_tokens_per_s = result.predicted_decode_tokens_per_s;
    row.bound = result.bound;
    row.moved_bytes_per_step = result.moved_bytes_per_step;
    prefill.push_back(result.prefill_tokens_per_s);
    decode.push_back(result.decode_tokens_per_s);
    generation.push_back(result.generation_tokens_per_s);
    disk.push_back(result.disk_gbps);
    h2d.push_back(result.h2d_gbps);
    busy.push_back(result.copy_busy_percent);
    decode_batch.push_back(result.decode_batch);
  }
  row.prefill_tokens_per_s = Summarize(prefill);
  row.decode_tokens_per_s = Summarize(decode);
  row.generation_tokens_per_s = Summarize(generation);
  row.disk_gbps = Summarize(disk);
  row.h2d_gbps = Summarize(h2d);
  row.copy_busy_percent = Summarize(busy);
  row.decode_batch = Summarize(decode_batch);
  row.percent_of_bound =
      row.predicted_decode_tokens_per_s > 0
          ? 100 * row.decode_tokens_per_s.mean / row.predicted_decode_tokens_per_s
          : 0;
  FillStreamBound(row);
  WarnIfStaggered(row);
  spdlog::info("{} weights, batch {}, {} refill: generation {:.1f} tok/s", row.weights,
               row.batch_size, row.refill, row.generation_tokens_per_s.mean);
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  if (!(file << text)) Fail("cannot write {}", path);
  spdlog::info("wrote {}", path);
}

// What the plot's title says: the model, the machine and threads it ran on, and today's date.
PlotInfo DescribeRun(const BenchOptions& options, const Checkpoint& checkpoint) {
  PlotInfo info;
  std::filesystem::path directory = std::filesystem::path(options.model_dir).lexically_normal();
  if (!directory.has_filename()) directory = directory.parent_path();  // "dir/" names dir
  info.model = fmt::format("{} ({}, {} layers, {})", directory.filename().string(),
                           checkpoint.config.model_type, checkpoint.config.num_layers,
                           checkpoint.weights_description());
  const int threads = options.session.threads > 0
                          ? options.session.threads
                          : static_cast<int>(std::thread::hardware_concurrency());
  info.machine = fmt::format("{}, {} thread{}", CpuModelName(), threads, threads == 1 ? "" : "s");
  if (options.session.device.device == BackendKind::kCuda) {
    info.machine += fmt::format(", CUDA device {}", options.session.device.gpu);
  }
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::localtime(&now));
  info.date = date;
  return info;
}

void RunBench(const BenchOptions& options) {
  // Before the model is loaded: a sweep can run for hours, and a bad --plot must not waste them.
  if (!options.plot_path.empty()) CheckPlotPath(options.plot_path);
  const Checkpoint checkpoint = WithLayerParts(formats::LoadCheckpoint(options.model_dir));
  // What a GPU run's weight stream is measured against: the link's rate from pinned memory.
  double pinned_h2d_gbps = 0;
  if (options.session.device.device == BackendKind::kCuda) {
    pinned_h2d_gbps = cuda::MeasurePinnedH2DGbps(options.session.device.gpu, kPinnedProbeBytes);
    spdlog::info("pinned host-to-device copies: {:.1f} GB/s ({} MiB buffers)", pinned_h2d_gbps,
                 kPinnedProbeBytes >> 20);
  }
  std::vector<BenchRow> rows;
  for (const std::string& refill_name : options.refills) {
    if (refill_name != "continuous" && refill_name != "static") {
      Fail("--refill: '{}' is not one of continuous, static", refill_name);
    }
    const Refill refill = refill_name == "static" ? Refill::kStatic : Refill::kContinuous;
    for (const std::string& weights_text : options.weights) {
      const WeightsMode weights = ParseWeightsMode(weights_text);
      for (int depth : options.prefetch_depths) {
        for (const std::string& prompt_text : options.prompt_lens) {
          for (const std::string& gen_text : options.gen_lens) {
            const LengthRange prompt = ParseLength(prompt_text, "--prompt-len");
            const LengthRange gen = ParseLength(gen_text, "--gen-len");
            for (const std::string& batch_text : options.batch_sizes) {
              const int batch = ParseBatchSize(batch_text);
              BenchRow row;
              row.weights = weights_text;
              row.prefetch_depth = depth;
              row.auto_batch = batch == 0;
              row.prompt_len = prompt.text;
              row.gen_len = gen.text;
              row.refill = refill_name;
              row.repeats = options.repeats;
              row.pinned_h2d_gbps = pinned_h2d_gbps;
              SessionOptions session = options.session;
              session.batch_size = batch;
              session.max_context = prompt.high + gen.high + 1;
              // Decoding, a sequence attends over its prompt and half its generation on average.
              session.mean_context = (prompt.low + prompt.high) / 2 + (gen.low + gen.high) / 4;
              session.weights = weights;
              session.prefetch_depth = depth;
              const int count = options.num_prompts > 0 ? options.num_prompts : std::max(batch, 16);
              session.max_auto_batch = count;  // more slots than prompts would sit idle
              const std::vector<Request> requests =
                  SyntheticRequests(count, prompt, gen, checkpoint.config.vocab_size);
              MeasureRow(checkpoint, session, refill, requests, row);
              rows.push_back(row);
            }
          }
        }
      }
    }
  }
  fmt::print("{}", MarkdownTable(rows));
  if (!options.csv_path.empty()) WriteText(options.csv_path, Csv(rows));
  if (!options.json_path.empty()) WriteText(options.json_path, Json(rows));
  if (!options.plot_path.empty()) {
    WritePlot(options.plot_path, ThroughputPlotSvg(rows, DescribeRun(options, checkpoint)));
  }
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* command = app.add_subcommand(
      "bench", "Throughput sweeps over batch size, lengths, placement and prefetch depth");
  command->add_option("--model", options->model_dir, "converted zinf checkpoint")->required();
  // Every list item is checked while parsing (the parsers throw naming the flag), so a typo in
  // the last item fails before the first configuration runs, not after.
  command
      ->add_option("--batch-size", options->batch_sizes,
                   "comma list of sequences per batch (integers >= 1) or auto")
      ->delimiter(',')
      ->capture_default_str()
      ->each([](const std::string& text) { ParseBatchSize(text); });
  command
      ->add_option("--prompt-len", options->prompt_lens,
                   "comma list of prompt lengths in tokens, N or ranges A:B (mixed lengths drawn "
                   "from [A, B])")
      ->delimiter(',')
      ->capture_default_str()
      ->each([](const std::string& text) { ParseLength(text, "--prompt-len"); });
  command
      ->add_option("--gen-len", options->gen_lens,
                   "comma list of generated lengths in tokens, N or ranges A:B")
      ->delimiter(',')
      ->capture_default_str()
      ->each([](const std::string& text) { ParseLength(text, "--gen-len"); });
  command->add_option("--weights", options->weights, "comma list of auto, resident, stream")
      ->delimiter(',')
      ->capture_default_str()
      ->check(OneOf({"auto", "resident", "stream"}));
  command
      ->add_option("--prefetch-depth", options->prefetch_depths,
                   "comma list of extents read ahead (integers >= 0); -1 takes the plan's")
      ->delimiter(',')
      ->capture_default_str()
      ->check(IntAtLeast(-1));
  command->add_option("--refill", options->refills, "comma list of continuous, static")
      ->delimiter(',')
      ->capture_default_str()
      ->check(OneOf({"continuous", "static"}));
  command
      ->add_option("--num-prompts", options->num_prompts,
                   "prompts per run (default: one batch, at least 16)")
      ->check(IntAtLeast(1, "leave the flag out for one batch"));
  command->add_option("--repeat", options->repeats, "runs per configuration")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  SessionFlags swept;  // comma lists above, or set per run from the lengths
  swept.batch_size = swept.weights = swept.prefetch_depth = swept.max_context = false;
  AddSessionOptions(command, options->session, swept);
  command->add_option("--csv", options->csv_path, "also write CSV here");
  command->add_option("--json", options->json_path, "also write JSON here");
  command->add_option("--plot", options->plot_path,
                      "decode tok/s vs batch size, .svg or .png (checked before the sweep)");
  command->callback([options] { RunBench(*options); });
}

}  // namespace zinf::cli
