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
    cuda::ParseComputeType(options.device.gpu_compute);  // a bad flag first, whatever the machine
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
  if (options.device.device == "cuda") {
    OpenCuda(checkpoint, options, inputs);
    return;
  }
  if (options.weights == "auto") {
    plan_ = MakePlan(inputs);
    if (options.prefetch_depth >= 0 && plan_.offload_needed) {
      plan_ = EvaluatePlacement(inputs, plan_.placement, options.prefetch_depth);
    }
  } else if (options.weights == "resident" || options.weights == "stream") {
    const Tier tier = options.weights == "resident" ? Tier::kDevice : Tier::kNvme;
    plan_ = EvaluatePlacement(inputs, std::vector<Tier>(checkpoint.extents.size(), tier),
                              options.prefetch_depth >= 0 ? options.prefetch_depth : 1);
  } else {
    Fail("--weights: '{}' is not one of auto, resident, stream", options.weights);
  }
  spdlog::info("{}", plan_.Summary());
  OpenWeights(checkpoint, options);
  backend_ = std::make_unique<cpu::CpuBackend>(CpuThreads(options));
  model_ = std::make_unique<Model>(checkpoint, *backend_, *weights_, limits_);
}

void EngineSession::OpenWeights(const Checkpoint& checkpoint, const SessionOptions& options) {
  io::WeightSourceOptions source;
  source.fault_hook = options.fault_hook;
  for (Tier tier : plan_.placement) {
    source.placements.push_back(tier == Tier::kNvme ? io::WeightPlacement::kStreamed
                                                    : io::WeightPlacement::kResident);
  }
  source.prefetch_depth = plan_.prefetch_depth;
  weights_ = io::OpenWeightSource(checkpoint, source);
}

// The CUDA plan (engine/planner/cuda_planner.cpp) puts each extent in device memory (read from the file
// once), in page-locked DRAM (copied to a device slot every step) or on NVMe (read into pinned
// staging, then copied); --weights resident|stream force all of one kind.
void EngineSession::OpenCuda(const Checkpoint& checkpoint, const SessionOptions& options,
                             const PlannerInputs& inputs) {
  const size_t num_extents = checkpoint.extents.size();
  if (options.weights == "auto") {
    plan_ = MakePlan(inputs);
  } else if (options.weights == "resident" || options.weights == "stream") {
    plan_ = Plan{};
    plan_.on_cuda = true;
    plan_.placement.assign(num_extents, options.weights == "resident" ? Tier::kDevice : Tier::kNvme);
    plan_.prefetch_depth = 1;
    plan_.bound = "gpu";
  } else {
    Fail("--weights: '{}' is not one of auto, resident, stream", options.weights);
  }
  if (options.prefetch_depth >= 0) plan_.prefetch_depth = options.prefetch_depth;
  const CudaStaging staging = SetCudaStaging(checkpoint.extents, plan_);  // what the source allocates
  spdlog::info("{}", plan_.Summary());

  cuda::CudaOptions cuda_options;
  cuda_options.device = options.device.gpu;
  cuda_options.compute = cuda::ParseComputeType(options.device.gpu_compute);
  cuda_options.gpu_mem_bytes = inputs.gpu_mem_bytes;
  for (const Tier tier : plan_.placement) cuda_options.device_resident.push_back(tier == Tier::kDevice);
  cuda_options.streaming_slots = std::max(plan_.prefetch_depth + 1, 2);
  cuda_options.kv_offload = inputs.workload.kv_offload;
  cuda_options.host_threads = CpuThreads(options);
  backend_ = cuda::CreateCudaBackend(checkpoint, limits_, cuda_options);

  io::WeightSourceOptions source;
  source.fault_hook = options.fault_hook;
  for (const Tier tier : plan_.placement) {
    // Device-resident extents are read once on their way to the GPU: no DRAM kept for them.
    source.placements.push_back(tier == Tier::kDram ? io::WeightPlacement::kResident
                                                    : io::WeightPlacement::kStreamed);
  }
  source.prefetch_depth = std::max(plan_.prefetch_depth, 1);
  source.copy_buffers = staging.copy_buffers;
  weights_ = io::OpenWeightSource(checkpoint, source);
  for (const std::span<const std::byte> region : weights_->HostMemory()) {
    backend_->UseHostMemory(region);
  }
  model_ = std::make_unique<Model>(checkpoint, *backend_, *weights_, limits_);
}

}  // namespace zinf::cli
