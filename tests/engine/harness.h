// Runs the engine in-process for tests: convert a model once, generate with chosen settings.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/generator.h"
#include "engine/model.h"
#include "engine/perplexity.h"
#include "engine/planner/placement.h"
#include "engine/request.h"
#include "engine/tokenizer.h"
#include "io/weight_source_factory.h"
#include "model_formats/converter.h"

namespace zinf::testing {

// Makes a device backend for a run (the CUDA tests); it may move extents of `placement` (the
// settings' host placement, on the CPU) to the device and give it device slots. Without one, runs
// go through cli::EngineSession, the wiring `zinf generate` uses.
using BackendFactory = std::function<std::unique_ptr<Backend>(const Checkpoint&, const ModelLimits&,
                                                              Placement& placement)>;

struct EngineSettings {
  io::WeightPlacement placement = io::WeightPlacement::kResident;
  int prefetch_depth = 1;
  int copy_buffers = 0;  // staging beyond prefetch_depth + 1 (a CUDA plan's kCudaCopyBuffers)
  int batch_size = 8;
  int step_tokens = 512;
  int threads = 2;
  int max_context = 0;  // 0: the model's
  Refill refill = Refill::kContinuous;
  DType kv_dtype = DType::kF32;
  int micro_batch_tokens = 0;
  BackendFactory make_backend;  // empty: cpu::CpuBackend with `threads` threads
  std::string cpu_mem;  // non-empty: the planner places extents under this DRAM budget ("300K")
};

struct LoadedModel {
  Checkpoint checkpoint;
  std::unique_ptr<Tokenizer> tokenizer;
};

// The bundled stories260K, converted once per process (f32).
const LoadedModel& Stories260K();
// Converts an HF directory into a fresh zinf directory and loads it.
LoadedModel ConvertAndLoad(const std::string& hf_dir, const std::string& name);
LoadedModel ConvertAndLoad(const std::string& hf_dir, const std::string& name,
                           formats::ConvertOptions options);
// The bundled stories260K converted with --dtype `dtype` (int8, int4) and `group_size`.
LoadedModel Stories260KAs(DType dtype, int group_size = 64);

// Completions in request order.
std::vector<Completion> Generate(const LoadedModel& model, const std::vector<Request>& requests,
                                 const EngineSettings& settings);

// Generate, with what the run placed and moved.
struct GenerateResult {
  std::vector<Completion> completions;  // in request order
  Placement placement;
  ExpertTraffic expert_traffic;
  WeightIoStats io;
  GenerationStats generation;
};
GenerateResult GenerateWithStats(const LoadedModel& model, const std::vector<Request>& requests,
                                 const EngineSettings& settings);

// Next-token logits at the last position of `prompt_ids`.
std::vector<float> LastLogits(const LoadedModel& model, const std::vector<TokenId>& prompt_ids,
                              const BackendFactory& make_backend = {});

// MeasurePerplexity on a model built for it: one KV slot of options.context positions, steps of
// `step_tokens` tokens each wanting all their logits.
PerplexityResult Perplexity(const LoadedModel& model, const std::vector<TokenId>& tokens,
                            const PerplexityOptions& options, int step_tokens,
                            DType kv_dtype = DType::kF32);

// A greedy request for `prompt_ids` that ignores EOS.
Request GreedyRequest(std::string id, std::vector<TokenId> prompt_ids, int max_new_tokens);

}  // namespace zinf::testing
