// Everything one run of the engine needs, built from a checkpoint and the user's options: the
// placement plan, the weight source it implies, the backend (CPU or CUDA) and the model. Shared by generate
// and bench so both run exactly the same path.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/model.h"
#include "engine/planner/planner.h"
#include "engine/weight_source.h"
#include "io/weight_source_factory.h"

namespace zinf::cli {

// Where the forward pass runs (--device, --gpu, --gpu-compute, --gpu-mem).
struct DeviceChoice {
  std::string device = "cpu";        // cpu or cuda
  int gpu = 0;                       // cuda: device index
  std::string gpu_compute = "bf16";  // cuda: what f32 weights are multiplied in (bf16 or f32)
  std::string gpu_mem;               // cuda: device memory budget; empty: what the device has
  std::string kv_offload = "none";   // cuda: none, or cpu (KV cache in DRAM, attention on the CPU)
};

struct SessionOptions {
  int batch_size = 0;      // 0: auto — the planner's best under the budget, at most max_auto_batch
  int max_auto_batch = 256;
  int max_context = 0;   // 0: the model's max_position_embeddings, at most kDefaultMaxContext
  int step_tokens = 512;
  int micro_batch_tokens = 0;  // 0: a step is one micro-batch
  int logit_rows_per_step = 0;  // 0: one per sequence; perplexity wants a whole step's
  std::string kv_dtype = "f32";  // f32 or int8
  int threads = 0;       // 0: all cores
  std::string weights = "auto";  // auto (planner under cpu_mem), resident or stream
  int prefetch_depth = -1;       // -1: the plan's
  std::string cpu_mem;           // e.g. "24G"; empty: this machine's memory
  DeviceChoice device;
  io::ReadFaultHook fault_hook;  // tests only
};

// Registers --device, --gpu, --gpu-compute, --gpu-mem and --kv-offload on a command.
void AddDeviceOptions(CLI::App* command, DeviceChoice& choice);

// "auto" → 0, else a positive integer; throws zinf::Error naming --batch-size.
int ParseBatchSize(const std::string& text);

// --kv-offload: "none" → false, "cpu" → true (only with --device cuda: on the CPU the KV cache is
// in DRAM already); throws zinf::Error naming the flag otherwise.
bool ParseKvOffload(const std::string& text, const std::string& device);

// Without --max-context, long-context models get this many positions per sequence, so the KV
// cache of a large batch stays within DRAM.
inline constexpr int kDefaultMaxContext = 4096;

Plan PlanRun(const Checkpoint& checkpoint, const SessionOptions& options,
             const PlannerInputs& inputs);

// Owns the weight source, backend and model; not thread-safe. Construction throws zinf::Error
// (a plan that cannot fit, an unreadable weights file).
class EngineSession {
 public:
  EngineSession(const Checkpoint& checkpoint, const SessionOptions& options);

  Model& model() { return *model_; }
  WeightSource& weights() { return *weights_; }
  const Plan& plan() const { return plan_; }
  const Bandwidths& bandwidths() const { return bandwidths_; }  // the rates the plan assumed
  const ModelLimits& limits() const { return limits_; }
  std::string backend_name() const { return backend_->name(); }
  TransferStats transfer_stats() const { return backend_->transfer_stats(); }

 private:
  Plan plan_;
  Bandwidths bandwidths_;
  ModelLimits limits_;
  std::unique_ptr<WeightSource> weights_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
};

}  // namespace zinf::cli
