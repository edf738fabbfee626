// Test harness: `zinf generate`'s session (cli::EngineSession), in-process.
#include "tests/engine/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cmd/engine_session.h"
#include "cpu/cpu_backend.h"
#include "engine/generator.h"
#include "engine/layer_parts.h"
#include "engine/model.h"
#include "model_formats/converter.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "model_formats/zinf_format.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

LoadedModel ConvertAndLoad(const std::string& hf_dir, const std::string& name) {
  return ConvertAndLoad(hf_dir, name, {});
}

LoadedModel ConvertAndLoad(const std::string& hf_dir, const std::string& name,
                           formats::ConvertOptions options) {
  const std::string out_dir = MakeTempDir(name);
  options.overwrite = true;
  formats::ConvertCheckpoint(hf_dir, out_dir, options);
  LoadedModel model;
  // As the commands load it: layers in parts (engine/layer_parts.h).
  model.checkpoint = WithLayerParts(formats::LoadCheckpoint(out_dir));
  if (model.checkpoint.tokenizer)
    model.tokenizer = formats::LoadCheckpointTokenizer(model.checkpoint);
  return model;
}

const LoadedModel& Stories260K() {
  static const LoadedModel model =
      ConvertAndLoad(std::string(ZINF_SOURCE_DIR) + "/models/stories260K", "stories260K");
  return model;
}

LoadedModel Stories260KAs(DType dtype, int group_size) {
  formats::ConvertOptions options;
  options.dtype = dtype;
  options.group_size = group_size;
  return ConvertAndLoad(std::string(ZINF_SOURCE_DIR) + "/models/stories260K",
                        fmt::format("stories260K-{}-g{}", DTypeName(dtype), group_size), options);
}

namespace {

// The engine of one run: the session `zinf generate` builds, or, with a device backend factory,
// the same parts wired by hand around the factory's placement.
struct Engine {
  std::unique_ptr<cli::EngineSession> session;
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Backend> host_experts;  // placement.host_computes_experts: a CPU backend
  std::unique_ptr<Model> model;
  Placement placement;  // with a backend factory; else the session's plan has it

  Model& get() { return session ? session->model() : *model; }
  WeightSource& source() { return session ? session->weights() : *weights; }
  const Placement& placed() const { return session ? session->plan().placement : placement; }
};

Engine OpenEngine(const LoadedModel& loaded, const EngineSettings& settings,
                  const cli::SessionOptions& options) {
  Engine engine;
  if (!settings.make_backend) {
    engine.session = std::make_unique<cli::EngineSession>(loaded.checkpoint, options);
    return engine;
  }
  const Checkpoint& checkpoint = loaded.checkpoint;
  ModelLimits limits;
  limits.max_sequences = std::max(options.batch_size, 1);
  limits.max_tokens_per_step = std::max(options.step_tokens, options.batch_size);
  limits.max_logit_rows = options.logit_rows_per_step;
  limits.max_context = options.max_context;
  limits.kv_dtype = settings.kv_dtype;
  limits.micro_batch_tokens = options.micro_batch_tokens;
  Placement placement;
  const bool streamed = settings.placement == io::WeightPlacement::kStreamed;
  placement.tiers.assign(checkpoint.extents.size(), streamed ? Tier::kNvme : Tier::kDevice);
  placement.prefetch_depth = settings.prefetch_depth;
  placement.copy_buffers = settings.copy_buffers;
  placement.staging_buffers = streamed ? settings.prefetch_depth + 1 + settings.copy_buffers : 0;
  placement.staging_buffer_bytes = streamed ? checkpoint.max_extent_padded_bytes() : 0;
  engine.backend = settings.make_backend(checkpoint, limits, placement);
  engine.weights = io::OpenWeightSource(checkpoint, placement, {});
  for (const std::span<const std::byte> region : engine.weights->HostMemory()) {
    engine.backend->UseHostMemory(region);
  }
  if (placement.host_computes_experts) {
    engine.host_experts = std::make_unique<cpu::CpuBackend>(1);
  }
  engine.model = std::make_unique<Model>(checkpoint, *engine.backend, *engine.weights, limits,
                                         placement, engine.host_experts.get());
  engine.placement = placement;
  return engine;
}

cli::SessionOptions OptionsFor(const LoadedModel& model, const EngineSettings& settings) {
  cli::SessionOptions options;
  options.weights = settings.placement == io::WeightPlacement::kStreamed
                        ? cli::WeightsMode::kStream
                        : cli::WeightsMode::kResident;
  if (!settings.cpu_mem.empty()) {
    options.weights = cli::WeightsMode::kAuto;
    options.cpu_mem = settings.cpu_mem;
  }
  options.prefetch_depth = settings.prefetch_depth;
  options.batch_size = settings.batch_size;
  options.step_tokens = settings.step_tokens;
  options.threads = settings.threads;
  options.max_context = settings.max_context > 0 ? settings.max_context
                                                 : model.checkpoint.config.max_position_embeddings;
  options.kv_dtype = settings.kv_dtype;
  options.micro_batch_tokens = settings.micro_batch_tokens;
  return options;
}

}  // namespace

std::vector<Completion> Generate(const LoadedModel& model, const std::vector<Request>& requests,
                                 const EngineSettings& settings) {
  return GenerateWithStats(model, requests, settings).completions;
}

GenerateResult GenerateWithStats(const LoadedModel& model, const std::vector<Request>& requests,
                                 const EngineSettings& settings) {
  Engine engine = OpenEngine(model, settings, OptionsFor(model, settings));
  GeneratorOptions options;
  options.eos_ids = model.checkpoint.config.eos_token_ids;
  options.refill = settings.refill;
  Generator generator(engine.get(), model.tokenizer.get(), options);

  size_t next = 0;
  std::map<std::string, Completion> by_id;
  GeneratorCallbacks callbacks;
  callbacks.next_request = [&]() -> std::optional<Request> {
    if (next == requests.size()) return std::nullopt;
    return requests[next++];
  };
  callbacks.on_complete = [&](const Request& request, Completion&& completion) {
    by_id[request.id] = std::move(completion);
  };
  callbacks.on_error = [&](const Request& request, const std::string& message) {
    Completion failed;
    failed.id = request.id;
    failed.text = "ERROR: " + message;
    by_id[request.id] = failed;
  };
  generator.Run(callbacks, nullptr);
  GenerateResult result;
  for (const Request& request : requests) result.completions.push_back(by_id.at(request.id));
  result.placement = engine.placed();
  result.expert_traffic = engine.get().expert_traffic();
  result.io = engine.source().stats();
  result.generation = generator.stats();
  return result;
}

std::vector<float> LastLogits(const LoadedModel& model, const std::vector<TokenId>& prompt_ids,
                              const BackendFactory& make_backend) {
  EngineSettings settings;
  settings.batch_size = 1;
  settings.step_tokens = static_cast<int>(prompt_ids.size());
  settings.make_backend = make_backend;
  Engine engine = OpenEngine(model, settings, OptionsFor(model, settings));
  StepBatch batch;
  batch.AddChunk(0, 0, prompt_ids, true);
  std::vector<float> logits(model.checkpoint.config.vocab_size);
  engine.get().Forward(batch, logits);
  return logits;
}

PerplexityResult Perplexity(const LoadedModel& model, const std::vector<TokenId>& tokens,
                            const PerplexityOptions& options, int step_tokens, DType kv_dtype) {
  EngineSettings settings;
  settings.batch_size = 1;
  settings.step_tokens = step_tokens;
  settings.max_context = options.context;
  settings.kv_dtype = kv_dtype;
  cli::SessionOptions session = OptionsFor(model, settings);
  session.logit_rows_per_step = step_tokens;
  Engine engine = OpenEngine(model, settings, session);
  return MeasurePerplexity(engine.get(), tokens, options, {});
}

Request GreedyRequest(std::string id, std::vector<TokenId> prompt_ids, int max_new_tokens) {
  Request request;
  request.id = std::move(id);
  request.prompt_ids = std::move(prompt_ids);
  request.max_new_tokens = max_new_tokens;
  request.ignore_eos = true;
  return request;
}

}  // namespace zinf::testing
