// Test harness: the same wiring as `zinf generate`, in-process.
#include "tests/engine/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cpu/cpu_backend.h"
#include "engine/generator.h"
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
  model.checkpoint = formats::LoadCheckpoint(out_dir);
  if (model.checkpoint.tokenizer) model.tokenizer = formats::LoadCheckpointTokenizer(model.checkpoint);
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

std::vector<Completion> Generate(const LoadedModel& model, const std::vector<Request>& requests,
                                 const EngineSettings& settings) {
  io::WeightSourceOptions source_options;
  source_options.placement = settings.placement;
  source_options.prefetch_depth = settings.prefetch_depth;
  source_options.copy_buffers = settings.copy_buffers;
  auto weights = io::OpenWeightSource(model.checkpoint, source_options);
  ModelLimits limits;
  limits.max_sequences = settings.batch_size;
  limits.max_tokens_per_step = settings.step_tokens;
  limits.max_context = settings.max_context > 0 ? settings.max_context
                                                : model.checkpoint.config.max_position_embeddings;
  limits.kv_dtype = settings.kv_dtype;
  limits.micro_batch_tokens = settings.micro_batch_tokens;
  const std::unique_ptr<Backend> backend =
      settings.make_backend ? settings.make_backend(model.checkpoint, limits)
                            : std::make_unique<cpu::CpuBackend>(settings.threads);
  Model engine(model.checkpoint, *backend, *weights, limits);
  GeneratorOptions options;
  options.eos_ids = model.checkpoint.config.eos_token_ids;
  options.refill = settings.refill;
  Generator generator(engine, model.tokenizer.get(), options);

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
  std::vector<Completion> ordered;
  for (const Request& request : requests) ordered.push_back(by_id.at(request.id));
  return ordered;
}

std::vector<float> LastLogits(const LoadedModel& model, const std::vector<TokenId>& prompt_ids,
                              const BackendFactory& make_backend) {
  io::WeightSourceOptions source_options;
  auto weights = io::OpenWeightSource(model.checkpoint, source_options);
  ModelLimits limits;
  limits.max_sequences = 1;
  limits.max_tokens_per_step = static_cast<int>(prompt_ids.size());
  limits.max_context = model.checkpoint.config.max_position_embeddings;
  const std::unique_ptr<Backend> backend = make_backend ? make_backend(model.checkpoint, limits)
                                                        : std::make_unique<cpu::CpuBackend>(2);
  Model engine(model.checkpoint, *backend, *weights, limits);
  StepBatch batch;
  batch.AddChunk(0, 0, prompt_ids, true);
  std::vector<float> logits(model.checkpoint.config.vocab_size);
  engine.Forward(batch, logits);
  return logits;
}

PerplexityResult Perplexity(const LoadedModel& model, const std::vector<TokenId>& tokens,
                            const PerplexityOptions& options, int step_tokens, DType kv_dtype) {
  auto weights = io::OpenWeightSource(model.checkpoint, {});
  cpu::CpuBackend backend(2);
  ModelLimits limits;
  limits.max_sequences = 1;
  limits.max_tokens_per_step = step_tokens;
  limits.max_logit_rows = step_tokens;
  limits.max_context = options.context;
  limits.kv_dtype = kv_dtype;
  Model engine(model.checkpoint, backend, *weights, limits);
  return MeasurePerplexity(engine, tokens, options, {});
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
