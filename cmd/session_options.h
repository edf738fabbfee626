// The options every engine command shares (generate, bench, perplexity, plan): declared and
// registered once, turned into enums while the command line is parsed, and turned into the
// planner's inputs by one function, so `zinf plan` plans exactly what `generate` runs.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "engine/checkpoint.h"
#include "engine/model.h"
#include "engine/planner/planner.h"
#include "io/extent_reader.h"

namespace zinf::cli {

// Where the forward pass runs (--device, --gpu, --gpu-compute, --gpu-mem, --kv-offload).
struct DeviceChoice {
  BackendKind device = BackendKind::kCpu;
  int gpu = 0;                                 // cuda: device index
  GpuCompute gpu_compute = GpuCompute::kBf16;  // cuda: what f32 weights are multiplied in
  std::string gpu_mem;                         // cuda: device memory budget; empty: what it has
  bool kv_offload = false;  // cuda: KV cache in DRAM, attention on the CPU (--kv-offload cpu)
  MoeExperts moe_experts = MoeExperts::kAuto;  // cuda: where off-device experts are computed
};

enum class WeightsMode : uint8_t {
  kAuto,      // the planner places each extent under the budgets
  kResident,  // every extent held for the whole run
  kStream,    // every extent read from the file every step
};

// Rates `zinf plan` takes as flags for what-if plans; each given one replaces the calibrated or
// assumed rate.
struct RateOverrides {
  std::optional<double> disk_gbps, dram_gbps, gflops, pcie_gbps, hbm_gbps, tflops;
};

struct SessionOptions {
  int batch_size = 0;  // 0: auto — the planner's best under the budget, at most max_auto_batch
  int max_auto_batch = 256;
  int max_context = 0;  // 0: the model's max_position_embeddings, at most kDefaultMaxContext
  // generate: the positions its longest request needs (prompt + max_new_tokens); without
  // --max-context the cache holds that many when it is fewer than the default's (0: unknown).
  int job_context = 0;
  // Positions a decode step's rows attend over on average, for the planner's attention time
  // (bench knows it from the prompt and generation lengths); 0: max_context, an upper bound.
  int mean_context = 0;
  int step_tokens = 512;
  int micro_batch_tokens = 0;    // 0: a step is one micro-batch
  int logit_rows_per_step = 0;   // 0: one per sequence; perplexity wants a whole step's
  DType kv_dtype = DType::kF32;  // f32, f16 (CPU) or int8
  int threads = 0;               // 0: all cores
  int cpu_threads() const;       // --threads, or every core
  WeightsMode weights = WeightsMode::kAuto;
  int prefetch_depth = -1;  // -1: the plan's
  std::string cpu_mem;      // e.g. "24G"; empty: this machine's memory
  DeviceChoice device;
  RateOverrides rates;
  std::string routing_profile;   // --routing-profile: a mixture-of-experts model's measured use
  io::ReadFaultHook fault_hook;  // tests only
};

// The shared flags a command leaves out (bench sweeps some of them as comma lists).
struct SessionFlags {
  bool batch_size = true;
  bool weights = true;
  bool prefetch_depth = true;
  bool max_context = true;
  bool step_tokens = true;
  bool micro_batch_tokens = true;
};

// Registers the shared flags on a command, writing into `options` (its values are the defaults).
void AddSessionOptions(CLI::App* command, SessionOptions& options, const SessionFlags& flags = {});
// The device flags alone.
void AddDeviceOptions(CLI::App* command, DeviceChoice& choice);

// "auto" → 0, else a positive integer; throws zinf::Error naming --batch-size.
int ParseBatchSize(const std::string& text);
// "auto", "resident" or "stream"; throws zinf::Error naming --weights otherwise.
WeightsMode ParseWeightsMode(const std::string& text);
const char* WeightsModeName(WeightsMode mode);

// Without --max-context, long-context models get this many positions per sequence, so the KV
// cache of a large batch stays within DRAM.
inline constexpr int kDefaultMaxContext = 4096;

}  // namespace zinf::cli
