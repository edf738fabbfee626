// EngineSession: options → limits → plan → placements → weight source → backend → model.
#include "cmd/engine_session.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "cmd/byte_size.h"
#include "cmd/calibration.h"
#include "cuda/cuda_backend.h"
#include "cpu/cpu_backend.h"
#include "engine/error.h"

namespace zinf::cli {

namespace {

// --threads, or every core.
int CpuThreads(const SessionOptions& options) {
  return options.threads > 0 ? options.threads
                             : static_cast<int>(std::thread::hardware_concurrency());
}

// --gpu-mem, or what the device has free less a margin for the CUDA context and cuBLAS.
uint64_t GpuBudget(const DeviceChoice& device) {
  if (!device.gpu_mem.empty()) return ParseByteSize(device.gpu_mem, "--gpu-mem");
  return cuda::CudaFreeMemoryBytes(device.gpu) / 20 * 19;
}

PlannerInputs InputsFor(const Checkpoint& checkpoint, const SessionOptions& options,
                        const ModelLimits& limits) {
  PlannerInputs inputs;
  inputs.checkpoint = &checkpoint;
  inputs.backend = BackendKind::kCpu;
  if (options.device.device == "cuda") {
    inputs.backend = BackendKind::kCuda;
    inputs.gpu_mem_bytes = GpuBudget(options.device);
  }
  inputs.cpu_mem_bytes =
      options.cpu_mem.empty() ? PhysicalMemoryBytes() : ParseByteSize(options.cpu_mem, "--cpu-mem");
  inputs.workload.batch_size = limits.max_sequences;
  inputs.workload.max_context = limits.max_context;
  inputs.workload.step_tokens = limits.max_tokens_per_step;
  inputs.workload.kv_dtype = limits.kv_dtype;
  inputs.workload.kv_offload = ParseKvOffload(options.device.kv_offload, options.device.device);
  inputs.workload.micro_batch_tokens = limits.micro_batch_tokens;
  inputs.workload.logit_rows = limits.max_logit_rows;
  inputs.workload.gpu_compute = ParseGpuCompute(options.device.gpu_compute);
  if (std::optional<Bandwidths> measured = LoadCalibration()) inputs.bandwidths = *measured;
  return inputs;
}

}  // namespace

void AddDeviceOptions(CLI::App* command, DeviceChoice& choice) {
  command->add_option("--device", choice.device, "cpu, or cuda (weights resident in GPU memory)")
      ->capture_default_str();
  command->add_option("--gpu", choice.gpu, "CUDA device index")->capture_default_str();
  command->add_option("--gpu-compute", choice.gpu_compute,
                      "what f32 weights are multiplied in on the GPU: bf16 or f32 (f16/bf16 "
                      "checkpoints use their own type; products accumulate in f32)")
      ->capture_default_str();
  command->add_option("--gpu-mem", choice.gpu_mem,
                      "GPU memory budget, e.g. 70G (default: whatever the device has free)");
  command->add_option("--kv-offload", choice.kv_offload,
                      "cuda: none, or cpu — the KV cache in DRAM and attention on the CPU, so "
                      "device memory holds weights and the batch can grow")
      ->capture_default_str();
}

int ParseBatchSize(const std::string& text) {
  if (text == "auto") return 0;
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= 1) return value;
  } catch (const std::exception&) {
  }
  Fail("--batch-size: '{}' is not 'auto' or a positive integer", text);
}

bool ParseKvOffload(const std::string& text, const std::string& device) {
  if (text == "none") return false;
  if (text != "cpu") Fail("--kv-offload: '{}' is not one of none, cpu", text);
  if (device != "cuda") {
    Fail("--kv-offload cpu moves a GPU's KV cache to DRAM; with --device {} it is there already",
         device);
  }
  return true;
}

EngineSession::EngineSession(const Checkpoint& checkpoint, const SessionOptions& options) {
  if (options.batch_size < 0) Fail("--batch-size must be at least 1, got {}", options.batch_size);
  limits_.max_sequences = std::max(options.batch_size, 1);
  limits_.max_context = options.max_context > 0
                            ? options.max_context
                            : std::min(checkpoint.config.max_position_embeddings, kDefaultMaxContext);
  limits_.max_tokens_per_step = std::max(options.step_tokens, options.batch_size);
  limits_.max_logit_rows = options.logit_rows_per_step;
  if (options.micro_batch_tokens < 0) {
    Fail("--micro-batch-tokens must be 0 (the whole step) or positive, got {}",
         options.micro_batch_tokens);
  }
  limits_.micro_batch_tokens = options.micro_batch_tokens;
  if (options.kv_dtype != "f32" && options.kv_dtype != "int8") {
    Fail("--kv-dtype: '{}' is not one of f32, int8", options.kv_dtype);
  }
  limits_.kv_dtype = options.kv_dtype == "int8" ? DType::kI8 : DType::kF32;

  if (options.device.device != "cpu" && options.device.device != "cuda") {
    Fail("--device: '{}' is not one of cpu, cuda", options.device.device);
  }
  if (options.device.device == "cuda") {
    ParseGpuCompute(options.device.gpu_compute);  // a bad flag first, whatever the machine
    ParseKvOffload(options.device.kv_offload, options.device.device);
    if (const std::string reason = cuda::CudaUnavailableReason(); !reason.empty()) {
      Fail("--device cuda: {}; run with --device cpu", reason);
    }
  }
  PlannerInputs inputs = InputsFor(checkpoint, options, limits_);
  bandwidths_ = inputs.bandwidths;
  if (options.batch_size == 0) {
    const BatchChoice choice = ChooseBatchSize(inputs, options.max_auto_batch);
    spdlog::info("{}", choice.why);
    limits_.max_sequences = choice.batch_size;
    limits_.max_tokens_per_step = std::max(options.step_tokens, choice.batch_size);
    inputs = InputsFor(checkpoint, options, limits_);
  }
  plan_ = PlanRun(checkpoint, options, inputs);
  spdlog::info("{}", plan_.Summary());
  io::WeightSourceOptions io_options;
  io_options.fault_hook = options.fault_hook;
  if (options.device.device == "cuda") {
    cuda::CudaOptions cuda_options;
    cuda_options.device = options.device.gpu;
    cuda_options.compute = inputs.workload.gpu_compute;
    cuda_options.gpu_mem_bytes = inputs.gpu_mem_bytes;
    cuda_options.placement = plan_.placement;
    cuda_options.kv_offload = inputs.workload.kv_offload;
    cuda_options.host_threads = CpuThreads(options);
    backend_ = cuda::CreateCudaBackend(checkpoint, limits_, cuda_options);
    weights_ = io::OpenWeightSource(checkpoint, plan_.placement, io_options);
    for (const std::span<const std::byte> region : weights_->HostMemory()) {
      backend_->UseHostMemory(region);
    }
  } else {
    weights_ = io::OpenWeightSource(checkpoint, plan_.placement, io_options);
    backend_ = std::make_unique<cpu::CpuBackend>(CpuThreads(options));
  }
  model_ = std::make_unique<Model>(checkpoint, *backend_, *weights_, limits_, plan_.placement);
}

// The planner's placement (--weights auto), or every extent resident or streamed (--weights
// resident|stream) with its memory use and prediction evaluated the same way; --prefetch-depth
// re-evaluates the chosen placement at that depth.
Plan PlanRun(const Checkpoint& checkpoint, const SessionOptions& options,
             const PlannerInputs& inputs) {
  if (options.weights == "auto") {
    const Plan plan = MakePlan(inputs);
    if (options.prefetch_depth < 0 || !plan.offload_needed) return plan;
    return EvaluatePlacement(inputs, plan.placement.tiers, options.prefetch_depth);
  }
  if (options.weights != "resident" && options.weights != "stream") {
    Fail("--weights: '{}' is not one of auto, resident, stream", options.weights);
  }
  const Tier tier = options.weights == "resident" ? Tier::kDevice : Tier::kNvme;
  return EvaluatePlacement(inputs, std::vector<Tier>(checkpoint.extents.size(), tier),
                           options.prefetch_depth >= 0 ? options.prefetch_depth : 1);
}

}  // namespace zinf::cli
