// PlanSession: options → limits → planner inputs → batch size → placement (cmd/session_plan.h).
#include "cmd/session_plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "cmd/byte_size.h"
#include "cmd/calibration_cache.h"
#include "cmd/routing_profile_file.h"
#include "cuda/cuda_backend.h"
#include "engine/byte_units.h"
#include "engine/error.h"

namespace zinf::cli {

namespace {

// --gpu-mem, or what the device has free less a margin for the CUDA context and cuBLAS.
uint64_t GpuBudget(const DeviceChoice& device) {
  if (!device.gpu_mem.empty()) return ParseByteSize(device.gpu_mem, "--gpu-mem");
  const uint64_t free_bytes = cuda::CudaFreeMemoryBytes(device.gpu);
  if (free_bytes == 0) {
    Fail("--device cuda needs --gpu-mem (e.g. 80G) here: there is no usable GPU to ask how much "
         "memory it has");
  }
  return free_bytes / 20 * 19;
}

// This machine's calibration for `threads` threads (or the assumed rates), with each rate given as
// a flag replacing its measured or assumed value.
Bandwidths RatesFor(const RateOverrides& given, int threads) {
  Bandwidths rates = LoadCalibration(threads).value_or(Bandwidths{});
  const auto apply = [](const std::optional<double>& flag, double& rate) {
    if (flag) rate = *flag;
  };
  apply(given.disk_gbps, rates.disk_read_gbps);
  apply(given.dram_gbps, rates.dram_read_gbps);
  // The one rate for every dtype and size, and attention at its uncalibrated share of it.
  if (given.gflops) {
    rates.int8_gflops = rates.int4_gflops = rates.cpu_attention_gflops = 0;
    for (const TokenRatesField& table : kTokenRates) rates.*table.field = {};
  }
  apply(given.gflops, rates.compute_gflops);
  apply(given.pcie_gbps, rates.h2d_gbps);
  apply(given.hbm_gbps, rates.device_gbps);
  apply(given.tflops, rates.device_tflops);
  return rates;
}

// The CPU's calibrated rates hold for the thread count they were measured with: say so, once a
// process, when the cache holds none for the run's.
void WarnIfCalibratedForOtherThreads(const PlannerInputs& inputs, int threads) {
  const int measured = inputs.bandwidths.cpu_threads;
  static bool warned = false;
  if (warned || inputs.backend != BackendKind::kCpu || measured <= 0 || measured == threads) return;
  warned = true;
  spdlog::warn("the calibration in {} measured the CPU's rates with {} thread{}; this run uses {}, "
               "and the plan predicts as if it had {} — run zinf calibrate --threads {} (the cache "
               "keeps the rates of each thread count calibrated)",
               CalibrationCachePath(), measured, measured == 1 ? "" : "s", threads, measured,
               threads);
}

ModelLimits LimitsFor(const Checkpoint& checkpoint, const SessionOptions& options) {
  if (options.batch_size < 0) Fail("--batch-size must be at least 1, got {}", options.batch_size);
  if (options.micro_batch_tokens < 0) {
    Fail("--micro-batch-tokens must be 0 (the whole step) or positive, got {}",
         options.micro_batch_tokens);
  }
  ModelLimits limits;
  limits.max_sequences = std::max(options.batch_size, 1);
  limits.max_context = options.max_context > 0 ? options.max_context
                                               : std::min(checkpoint.config.max_position_embeddings,
                                                          kDefaultMaxContext);
  // A request longer than that default still stops there, as without knowing the job.
  if (options.max_context == 0 && options.job_context > 0) {
    limits.max_context = std::min(limits.max_context, options.job_context);
  }
  limits.max_tokens_per_step = std::max(options.step_tokens, options.batch_size);
  limits.max_logit_rows = options.logit_rows_per_step;
  limits.micro_batch_tokens = options.micro_batch_tokens;
  limits.kv_dtype = options.kv_dtype;
  return limits;
}

PlannerInputs InputsFor(const Checkpoint& checkpoint, const SessionOptions& options,
                        const ModelLimits& limits) {
  PlannerInputs inputs;
  inputs.checkpoint = &checkpoint;
  inputs.backend = options.device.device;
  if (inputs.backend == BackendKind::kCuda) inputs.gpu_mem_bytes = GpuBudget(options.device);
  const uint64_t physical = PhysicalMemoryBytes();
  inputs.cpu_mem_bytes =
      options.cpu_mem.empty() ? DefaultCpuMemBytes() : ParseByteSize(options.cpu_mem, "--cpu-mem");
  if (options.cpu_mem.empty() && inputs.cpu_mem_bytes == 0) {
    Fail("could not read the available memory from /proc/meminfo; give a DRAM budget with "
         "--cpu-mem");
  }
  if (physical > 0 && inputs.cpu_mem_bytes > physical) {
    spdlog::warn("--cpu-mem {} is more than this machine's {} of memory: a plan that counts on it "
                 "will swap or be killed",
                 FormatBytes(inputs.cpu_mem_bytes), FormatBytes(physical));
  }
  inputs.workload.batch_size = limits.max_sequences;
  inputs.workload.max_context = limits.max_context;
  inputs.workload.mean_context =
      options.mean_context > 0 ? std::min(options.mean_context, limits.max_context) : 0;
  inputs.workload.step_tokens = limits.max_tokens_per_step;
  inputs.workload.kv_dtype = limits.kv_dtype;
  inputs.workload.kv_offload = options.device.kv_offload;
  inputs.workload.micro_batch_tokens = limits.micro_batch_tokens;
  inputs.workload.logit_rows = limits.max_logit_rows;
  inputs.workload.gpu_compute = options.device.gpu_compute;
  inputs.workload.moe_experts = options.device.moe_experts;
  inputs.workload.spare_cores =
      std::max(static_cast<int>(std::thread::hardware_concurrency()) - options.cpu_threads(), 0);
  inputs.bandwidths = RatesFor(options.rates, options.cpu_threads());
  WarnIfCalibratedForOtherThreads(inputs, options.cpu_threads());
  return inputs;
}

// Every extent where --weights resident|stream puts it, streamed (if so) at --prefetch-depth or 1;
// an error when that does not fit the budget.
Plan ForcedPlan(const SessionOptions& options, const PlannerInputs& inputs) {
  const Tier tier = options.weights == WeightsMode::kResident ? Tier::kDevice : Tier::kNvme;
  return PlaceEveryExtent(inputs, tier, options.prefetch_depth >= 0 ? options.prefetch_depth : 1);
}

// The planner's placement (--weights auto; with --prefetch-depth, the best for a ring of that
// depth), or every extent resident or streamed (--weights resident|stream) with its memory use and
// prediction evaluated the same way (an error when that does not fit the budget).
Plan PlanPlacement(const SessionOptions& options, const PlannerInputs& inputs) {
  if (options.weights == WeightsMode::kAuto) {
    if (options.prefetch_depth < 0) return MakePlan(inputs);
    // Placed for that ring, not re-evaluated at it: a shallower ring's memory then holds extents
    // resident, and a deeper one's comes out of them instead of overrunning the budget.
    PlannerInputs at_depth = inputs;
    at_depth.max_prefetch_depth = at_depth.min_prefetch_depth = options.prefetch_depth;
    return MakePlan(at_depth);
  }
  return ForcedPlan(options, inputs);
}

}  // namespace

int MaxAutoBatchFor(size_t requests) {
  return static_cast<int>(std::clamp<size_t>(requests, 1, 256));
}

SessionPlan PlanSession(const Checkpoint& checkpoint, const SessionOptions& options) {
  if (options.device.kv_offload && options.device.device != BackendKind::kCuda) {
    Fail("--kv-offload cpu moves a GPU's KV cache to DRAM; with --device {} it is there already",
         BackendName(options.device.device));
  }
  if (options.kv_dtype == DType::kF16 && options.device.device == BackendKind::kCuda) {
    Fail("--kv-dtype f16 is a CPU cache format; with --device cuda use f32 or int8");
  }
  if (options.device.moe_experts != MoeExperts::kAuto) {
    if (options.device.device != BackendKind::kCuda) {
      Fail("--moe-experts {} chooses where a GPU run computes the experts it does not hold; with "
           "--device {} the CPU computes every expert already",
           MoeExpertsName(options.device.moe_experts), BackendName(options.device.device));
    }
    if (!checkpoint.config.is_moe()) {
      Fail("--moe-experts {}: this {} model has no experts (it is not a mixture of experts)",
           MoeExpertsName(options.device.moe_experts), checkpoint.config.model_type);
    }
  }
  const int trained = checkpoint.config.max_position_embeddings;
  if (trained > 0 && options.max_context > trained) {
    spdlog::warn("--max-context {} is beyond the {} positions this model was trained on: tokens "
                 "past position {} are likely to be poor",
                 options.max_context, trained, trained);
  }
  SessionPlan session;
  if (!options.routing_profile.empty()) {
    session.routing = std::make_shared<const RoutingProfile>(
        LoadRoutingProfile(options.routing_profile, checkpoint.config));
  }
  session.limits = LimitsFor(checkpoint, options);
  session.inputs = InputsFor(checkpoint, options, session.limits);
  session.inputs.routing = session.routing.get();
  if (options.batch_size == 0) {
    // On the CPU a forced placement's candidates are planned as that placement, so the batch it
    // picks fits with every extent where --weights puts it. (A CUDA plan's fit is the device
    // pool's, which only the CUDA planner's own placements check.)
    auto plan_for = [&options](const PlannerInputs& candidate) {
      if (options.weights == WeightsMode::kAuto || candidate.backend == BackendKind::kCuda)
        return MakePlan(candidate);
      return ForcedPlan(options, candidate);
    };
    const BatchChoice choice = ChooseBatchSize(session.inputs, options.max_auto_batch, plan_for);
    session.batch_choice = choice.why;
    SessionOptions chosen = options;
    chosen.batch_size = choice.batch_size;
    session.limits = LimitsFor(checkpoint, chosen);
    session.inputs = InputsFor(checkpoint, chosen, session.limits);
    session.inputs.routing = session.routing.get();
  }
  session.plan = PlanPlacement(options, session.inputs);
  return session;
}

}  // namespace zinf::cli
