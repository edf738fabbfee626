// zinf generate --model DIR --prompts FILE [--out FILE]: batched generation over a prompt file,
// one JSONL line per request written as each finishes. The prompt file is streamed: checked once
// before any work starts, then read again request by request as batch slots free up.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cmd/commands.h"
#include "cmd/engine_session.h"
#include "cmd/exit_codes.h"
#include "cmd/failure_tally.h"
#include "cmd/fault_injection.h"
#include "cmd/flag_checks.h"
#include "cmd/generate_progress.h"
#include "cmd/interrupt.h"
#include "cmd/job_context.h"
#include "cmd/plan_json.h"
#include "cmd/prompt_file.h"
#include "cmd/request_feed.h"
#include "cmd/results_file.h"
#include "cmd/resume_check.h"
#include "cmd/routing_profile_file.h"
#include "cmd/run_fingerprint.h"
#include "cmd/run_metrics.h"
#include "cmd/shard.h"
#include "engine/error.h"
#include "engine/generator.h"
#include "engine/layer_parts.h"
#include "io/weight_source_factory.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

struct GenerateOptions {
  std::string model_dir;
  std::string prompts;
  std::string out = "-";
  bool resume = false;
  bool resume_force = false;
  bool skip_bad_lines = false;
  bool print = false;
  SessionOptions session;
  std::string refill = "continuous";
  std::string metrics_json;
  std::string save_routing;    // --save-routing: where this run's expert use is written
  double progress_every = 30;  // seconds between progress log lines without a terminal
  std::string fault_inject;    // testing only; see cmd/fault_injection.h
  std::string chat_template = "auto";
  std::string shard;                   // --shard K/N | none; empty: the scheduler's environment
  std::optional<int64_t> shard_count;  // --shard-count N
  Request defaults;
};

// Reads the whole prompt file once, one line at a time, before any work: a malformed line, a
// duplicate id, a text prompt without a tokenizer or a chat prompt without a template fails the
// run here, with nothing lost.
// On --resume, the requests already done must be the same ones (cmd/resume_check.h).
// Returns how many requests are left to do (those not already in the output).
size_t CheckPromptFile(const std::string& path, const PromptFileOptions& options,
                       const ResultsFile& output, bool has_tokenizer,
                       const formats::ChatTemplates& chat_templates, bool force_resume,
                       JobContextTally& job) {
  PromptFileReader reader(path, options);
  ResumeCheck resume(output);
  size_t to_do = 0;
  while (std::optional<PromptEntry> entry = reader.Next()) {
    if (resume.IsDone(*entry)) continue;
    if ((entry->text || entry->chat) && !has_tokenizer) {
      Fail("{}:{}: a {} prompt needs a tokenizer, and this checkpoint has none; give "
           "\"prompt_ids\" instead",
           path, entry->line, entry->chat ? "chat" : "text");
    }
    if (entry->chat && chat_templates.empty()) {
      Fail("{}:{}: a \"messages\" request needs a chat template, and there is none (the model "
           "directory has no chat_template.jinja, chat_template.json or \"chat_template\" in "
           "tokenizer_config.json, or --chat-template is none); give one with --chat-template "
           "FILE (a .jinja template, or a .json holding \"chat_template\"){}",
           path, entry->line,
           chat_templates.load_error().empty()
               ? ""
               : "; the model's own template cannot be used: " + chat_templates.load_error());
    }
    ++to_do;
    job.Add(*entry);
  }
  resume.Finish(path, force_resume);
  return to_do;
}

// The name results give the model: its directory's, as users call it ("models/Qwen3-8B/" is
// "Qwen3-8B").
std::string ModelName(const std::string& model_dir) {
  std::filesystem::path path(model_dir);
  if (!path.has_filename()) path = path.parent_path();
  return path.filename().string();
}

void RunGenerate(GenerateOptions options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Fault> faults;
  if (!options.fault_inject.empty()) faults = ParseFaultSpec(options.fault_inject);

  // A job array's task runs its shard of the prompt file into a file of its own.
  std::string shard_origin;
  const std::optional<Shard> shard =
      ResolveShard({options.shard, options.shard_count, std::getenv}, &shard_origin);
  if (shard) {
    options.out = ShardOutputPath(options.out, *shard);
    spdlog::info("shard {} (from {}): requests i of {} with i mod {} = {}, written to {}",
                 ShardText(*shard), shard_origin, options.prompts, shard->count, shard->index,
                 options.out);
  }
  // The output first: an unwritable --out (read-only directory, full disk) fails before any
  // model or prompt is read.
  ResultsFile output(options.out, options.resume || options.resume_force);
  const Checkpoint checkpoint = WithLayerParts(formats::LoadCheckpoint(options.model_dir));
  std::unique_ptr<Tokenizer> tokenizer;
  if (checkpoint.tokenizer) tokenizer = formats::LoadCheckpointTokenizer(checkpoint);
  const formats::ChatTemplates chat_templates =
      formats::ChatTemplates::Load(options.chat_template, options.model_dir);
  if (!chat_templates.empty()) spdlog::debug("chat template: {}", chat_templates.origin());
  const PromptFileOptions prompt_options{options.skip_bad_lines, shard};
  // strftime_now() in chat templates renders this time, up front and when the requests run.
  const std::time_t chat_now = std::time(nullptr);
  JobContextTally job_tally(tokenizer.get(), chat_templates, options.defaults, chat_now);
  const size_t to_do =
      CheckPromptFile(options.prompts, prompt_options, output, tokenizer != nullptr, chat_templates,
                      options.resume_force, job_tally);
  nlohmann::ordered_json fingerprint =
      RunFingerprint(checkpoint, options.prompts, options.defaults, options.session);
  // Another template gives chat prompts other tokens, so a resumed run must render with the same.
  if (!chat_templates.empty()) {
    const formats::ChatTemplate* plain = chat_templates.For(false);
    const formats::ChatTemplate* tools = chat_templates.For(true);  // plain when no tool_use
    std::string sources = plain->source();
    if (tools != plain) sources += tools->source();
    fingerprint["settings"]["chat-template"] =
        fmt::format("{:016x}", XXH3_64bits(sources.data(), sources.size()));
  }
  // Recorded so that resuming a shard's file as another shard is refused, and merge can tell
  // which shard each file holds.
  if (shard) fingerprint["settings"]["shard"] = ShardText(*shard);
  CheckAndRecordFingerprint(output.path(), !output.done_ids().empty(), fingerprint,
                            options.resume_force);
  if (!output.done_ids().empty()) {
    spdlog::info("resuming: {} requests already in {}, {} to go", output.done_ids().size(),
                 output.path(), to_do);
    if (to_do == 0) {
      spdlog::info("nothing to do: every request of {} is in {}", options.prompts, output.path());
      if (output.done_errors() > 0) g_exit_code = kExitRequestsFailed;
      return;
    }
  }

  if (!options.save_routing.empty() && !checkpoint.config.is_moe()) {
    Fail("--save-routing {}: {} has no experts whose use could be recorded", options.save_routing,
         options.model_dir);
  }
  SessionOptions session_options = options.session;
  session_options.max_auto_batch = MaxAutoBatchFor(to_do);
  const JobContext job = job_tally.result();
  ApplyJobContext(job, session_options);
  if (job.requests > 0) spdlog::info("{}", DescribeJobContext(job));
  std::unique_ptr<FaultInjector> faults_injected;
  Checkpoint weights_checkpoint = checkpoint;  // a fault-injected run may read a private copy
  if (!faults.empty()) {
    faults_injected = std::make_unique<FaultInjector>(checkpoint, std::move(faults));
    spdlog::warn("{}", faults_injected->Describe());
    weights_checkpoint.weights_file = faults_injected->weights_path();
    session_options.fault_hook = faults_injected->Hook();
  }
  EngineSession session(weights_checkpoint, session_options);
  const WeightIoStats load_stats = session.weights().stats();  // the resident (DRAM-tier) load
  Model& model = session.model();
  std::optional<RoutingProfile> routing_record;
  if (!options.save_routing.empty()) {
    routing_record.emplace(checkpoint.config);
    model.RecordRouting(&*routing_record);
  }
  spdlog::info("model {} ({} layers, {}), backend {}, batch {}, context {}",
               checkpoint.config.model_type, checkpoint.config.num_layers,
               checkpoint.weights_description(), session.backend_name(),
               session.limits().max_sequences, session.limits().max_context);

  GeneratorOptions generator_options;
  generator_options.eos_ids = checkpoint.config.eos_token_ids;
  if (options.refill != "continuous" && options.refill != "static") {
    Fail("--refill: '{}' is not one of continuous, static", options.refill);
  }
  generator_options.refill = options.refill == "static" ? Refill::kStatic : Refill::kContinuous;
  Generator generator(model, tokenizer.get(), generator_options);
  FailureTally failures;
  RequestFeed feed(options.prompts, prompt_options, tokenizer.get(), chat_templates, chat_now,
                   options.defaults, ModelName(options.model_dir), output, failures);
  GenerateProgress progress(static_cast<int64_t>(to_do), options.progress_every);
  size_t finished = 0;  // results written by the generator; the feed writes unrunnable entries
  auto written = [&] { return finished + feed.errors_written(); };
  auto show_progress = [&] {
    const GenerationStats& stats = generator.stats();
    const auto done = static_cast<int64_t>(written());
    double remaining_tokens = -1;
    if (stats.admitted > 0) {
      const int64_t in_flight = stats.admitted - stats.completed;
      const int64_t not_started =
          std::max<int64_t>(0, static_cast<int64_t>(to_do) - done - in_flight);
      const double mean_tokens = static_cast<double>(stats.admitted_tokens) / stats.admitted;
      remaining_tokens = stats.TokensLeftInFlight() + not_started * mean_tokens;
    }
    progress.Update(done, failures.total(), stats.prompt_tokens, stats.generated_tokens,
                    remaining_tokens);
  };
  GeneratorCallbacks callbacks;
  callbacks.next_request = [&] { return feed.Next(); };
  callbacks.on_complete = [&](const Request& request, Completion&& completion) {
    const InFlightRequest in_flight = feed.Take(request.id);
    output.Append(completion,
                  AppendExtras{request.line_number, in_flight.digest,
                               in_flight.openai ? &*in_flight.openai : nullptr, feed.model_name()});
    if (options.print) {
      fmt::print("[{}] {}\n", completion.id, completion.text);
      std::fflush(stdout);
    }
    ++finished;
  };
  callbacks.on_error = [&](const Request& request, const std::string& message) {
    failures.Add(request.id, request.line_number, message);
    const InFlightRequest in_flight = feed.Take(request.id);
    output.AppendError({request.id, request.id_is_number}, request.line_number, message,
                       in_flight.digest, in_flight.openai ? &*in_flight.openai : nullptr);
    ++finished;
  };
  // Progress samples only at step ends: a completion is reported mid-step, before the step's
  // tokens are counted, and a rate sampled there read half the real one once steps took ~30 s.
  callbacks.on_step = [&](const GenerationStats&) { show_progress(); };
  const std::atomic<bool>* interrupted = InstallInterruptFlag();
  // Every line written so far is durable (ResultsFile syncs each), so a failure here loses only
  // the requests in flight; say where the finished ones are.
  const std::string kept_where =
      output.path() == "-" ? "" : fmt::format(" (kept in {}: rerun with --resume)", output.path());
  try {
    generator.Run(callbacks, interrupted);
  } catch (const std::exception& error) {
    progress.Finish();
    Rethrow(error,
            fmt::format("generation stopped after {} finished requests{}", written(), kept_where));
  }
  progress.Finish();
  if (feed.error()) {
    Fail("{}; stopped after {} finished requests{}; fix the line, or pass --skip-bad-lines, and "
         "run again with --resume",
         *feed.error(), written(), output.path() == "-" ? "" : " (kept in " + output.path() + ")");
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RunMetrics metrics = ComputeRunMetrics(generator.stats(), load_stats, session.weights().stats(),
                                         session.plan(), session.bandwidths(), seconds);
  metrics.failed = failures.total();  // the feed's unrunnable entries as well as the engine's
  metrics.skipped = static_cast<int64_t>(output.done_ids().size());
  metrics.interrupted = interrupted->load();
  metrics.experts = session.model().expert_traffic();
  if (routing_record) {  // what the finished steps routed, interrupted or not
    SaveRoutingProfile(options.save_routing, *routing_record, checkpoint.config);
    spdlog::info("routing profile of this run's {} steps written to {}", metrics.experts.steps,
                 options.save_routing);
  }
  spdlog::info("{}{}", shard ? fmt::format("shard {}: ", ShardText(*shard)) : "",
               metrics.SummaryLine());
  if (!options.metrics_json.empty()) {
    std::ofstream file(options.metrics_json, std::ios::trunc);
    nlohmann::json json = metrics.Json();
    json["plan"] = PlanJson(session.plan(), session.limits().max_sequences);
    if (!(file << json.dump(2) << "\n"))
      Fail("cannot write --metrics-json {}", options.metrics_json);
  }
  failures.LogRepeats(output.path() == "-" ? "the output" : output.path());
  if (failures.total() > 0 || output.done_errors() > 0) g_exit_code = kExitRequestsFailed;
  if (interrupted->load()) {
    spdlog::warn("interrupted: {} finished requests are in {}; rerun with --resume to finish the "
                 "other {}",
                 written(), output.path(), to_do - std::min(to_do, written()));
    g_exit_code = kExitInterrupted;
  }
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* command = app.add_subcommand("generate", "Generate continuations for a prompt file");
  command->add_option("--model", options->model_dir, "converted zinf checkpoint directory")
      ->required();
  command
      ->add_option("--prompts", options->prompts,
                   ".txt (one prompt per line), .jsonl ({\"id\", \"prompt\", \"prompt_ids\" or "
                   "\"messages\", per-request settings}) or an OpenAI Batch .jsonl (detected by "
                   "\"custom_id\"); '-' reads stdin: JSONL when its first non-blank character "
                   "is '{', else text (docs/cli.md)")
      ->required();
  command->add_option("--out", options->out, "JSONL output file, '-' for stdout")
      ->capture_default_str();
  command->add_flag("--resume", options->resume,
                    "skip requests already in --out, append the rest (refused when the model, "
                    "prompt file or an output-changing setting differs from the run that wrote "
                    "it: see OUT.run.json)");
  command->add_flag("--resume-force", options->resume_force,
                    "--resume even when the model, prompts or settings differ (the file then "
                    "mixes runs)");
  command
      ->add_option("--chat-template", options->chat_template,
                   "how \"messages\" prompts are rendered: auto (the model's own template), "
                   "none, or FILE (a .jinja template, or a .json holding \"chat_template\")")
      ->capture_default_str();
  command
      ->add_option("--shard", options->shard,
                   "K/N: run only shard K of N, the requests whose ordinal i among the request "
                   "lines has i mod N = K, into --out with .shard-KKK-of-NNN before its extension "
                   "(or in place of {shard}); none: the whole file. Default: from Slurm's "
                   "SLURM_ARRAY_TASK_ID or Kubernetes' JOB_COMPLETION_INDEX when set (docs/cli.md)")
      ->check(ShardCheck());
  command
      ->add_option("--shard-count", options->shard_count,
                   "N, the number of shards, for a shard index taken from SLURM_ARRAY_TASK_ID or "
                   "JOB_COMPLETION_INDEX (also ZINF_SHARD_COUNT)")
      ->check(IntAtLeast(1));
  command->add_flag("--skip-bad-lines", options->skip_bad_lines,
                    "log and skip malformed prompt lines instead of failing");
  command->add_flag("--print", options->print, "also print each result's text to stdout");
  AddSessionOptions(command, options->session);
  command
      ->add_option("--save-routing", options->save_routing,
                   "mixture of experts: write how often each expert was used in this run, for "
                   "--routing-profile (run a representative sample of your prompts)")
      ->type_name("FILE");
  command->add_option(
      "--metrics-json", options->metrics_json,
      "write the run's metrics (per-tier bytes and GB/s, overlap, % of bound) here");
  command
      ->add_option("--refill", options->refill,
                   "continuous (a finished sequence's slot is refilled at once) or static")
      ->capture_default_str()
      ->check(OneOf({"continuous", "static"}));
  command
      ->add_option("--progress-every", options->progress_every,
                   "seconds between progress log lines when stderr is not a terminal (0: none; "
                   "a terminal shows a live line instead)")
      ->capture_default_str()
      ->check(NonNegativeNumber());
  command->add_option("--fault-inject", options->fault_inject,
                      "testing only: make weight reads fail or return bad bytes; SPEC is a "
                      "comma-separated list of short, eagain, eio:EXTENT[@N], flip:EXTENT[@N] "
                      "(docs/reliability.md)");
  Request& d = options->defaults;
  // Each per-request setting is checked against the engine's table while parsing
  // (engine/request_limits.h), in the words a bad prompt-file field gets.
  command
      ->add_option("--max-new-tokens", d.max_new_tokens,
                   "most tokens generated per request, >= 1 (EOS and --stop end it sooner)")
      ->capture_default_str()
      ->check(SettingCheck(RequestSetting::kMaxNewTokens));
  command
      ->add_option("--temperature", d.sampling.temperature,
                   "divides the logits before sampling, >= 0 (0: greedy, always the most likely "
                   "token)")
      ->capture_default_str()
      ->check(SettingCheck(RequestSetting::kTemperature));
  command
      ->add_option("--top-k", d.sampling.top_k,
                   "sample among the K most likely tokens, K >= 0 (0: off)")
      ->capture_default_str()
      ->check(SettingCheck(RequestSetting::kTopK));
  command
      ->add_option("--top-p", d.sampling.top_p,
                   "sample among the most likely tokens whose probabilities sum to P, a "
                   "probability in (0, 1] (1: off)")
      ->capture_default_str()
      ->check(SettingCheck(RequestSetting::kTopP));
  command
      ->add_option("--min-p", d.sampling.min_p,
                   "drop tokens less likely than M times the most likely one, a fraction in "
                   "[0, 1] (0: off)")
      ->capture_default_str()
      ->check(SettingCheck(RequestSetting::kMinP));
  command
      ->add_option("--repetition-penalty", d.sampling.repetition_penalty,
                   "factor > 0 dividing the positive logits (multiplying the negative ones) of "
                   "tokens already in the prompt or output (1: off)")
      ->capture_default_str()
      ->check(SettingCheck(RequestSetting::kRepetitionPenalty));
  command
      ->add_option("--seed", d.sampling.seed,
                   "seed of each request's sampler, an integer in [0, 2^64): the same seed gives "
                   "the same tokens in any batch")
      ->capture_default_str()
      ->check(UnsignedInt());
  command->add_option("--stop", d.stop,
                      "stop string (repeatable): generation ends where one appears, and it is "
                      "left out of the result (docs/cli.md)");
  command->add_flag("--ignore-eos", d.ignore_eos,
                    "keep generating past end-of-sequence, to --max-new-tokens");
  command
      ->add_option("--logprobs", d.logprobs,
                   "N >= 0: each generated token's log-probability (natural log) and text, plus "
                   "the N most likely alternatives (default: none)")
      ->check(SettingCheck(RequestSetting::kLogprobs));
  command->callback([options] { RunGenerate(*options); });
}

}  // namespace zinf::cli
