// The shared engine flags (cmd/session_options.h): registered once, parsed into enums at once.
#include "cmd/session_options.h"

#include <thread>

#include "cmd/flag_checks.h"
#include "engine/dtype.h"
#include "engine/error.h"

namespace zinf::cli {

int SessionOptions::cpu_threads() const {
  return threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
}

namespace {

DType ParseKvDtype(const std::string& text) {
  const std::optional<DType> dtype = ParseDType(text);
  if (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kI8) return *dtype;
  Fail("--kv-dtype: '{}' is not one of f32, f16, int8", text);
}

BackendKind ParseDevice(const std::string& text) {
  if (text == "cpu") return BackendKind::kCpu;
  if (text == "cuda") return BackendKind::kCuda;
  Fail("--device: '{}' is not one of cpu, cuda", text);
}

bool ParseKvOffload(const std::string& text) {
  if (text == "none") return false;
  if (text == "cpu") return true;
  Fail("--kv-offload: '{}' is not one of none, cpu", text);
}

MoeExperts ParseMoeExperts(const std::string& text) {
  if (text == "auto") return MoeExperts::kAuto;
  if (text == "gpu") return MoeExperts::kGpu;
  if (text == "cpu") return MoeExperts::kCpu;
  Fail("--moe-experts: '{}' is not one of cpu, gpu, auto", text);
}

// A flag whose text becomes a value while the command line is parsed (a bad value fails before
// anything runs); `shown` is the default --help prints.
template <typename T, typename Parse>
CLI::Option* AddParsed(CLI::App* command, const std::string& name, T& target, Parse parse,
                       const std::string& shown, const std::string& help) {
  return command
      ->add_option_function<std::string>(
          name, [&target, parse](const std::string& text) { target = parse(text); }, help)
      ->default_str(shown);
}

}  // namespace

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

WeightsMode ParseWeightsMode(const std::string& text) {
  if (text == "auto") return WeightsMode::kAuto;
  if (text == "resident") return WeightsMode::kResident;
  if (text == "stream") return WeightsMode::kStream;
  Fail("--weights: '{}' is not one of auto, resident, stream", text);
}

const char* WeightsModeName(WeightsMode mode) {
  switch (mode) {
    case WeightsMode::kAuto: return "auto";
    case WeightsMode::kResident: return "resident";
    case WeightsMode::kStream: return "stream";
  }
  return "?";
}

void AddDeviceOptions(CLI::App* command, DeviceChoice& choice) {
  AddParsed(command, "--device", choice.device, ParseDevice, BackendName(choice.device),
            "cpu, or cuda (weights resident in GPU memory)");
  command->add_option("--gpu", choice.gpu, "CUDA device index (0 is the first GPU)")
      ->capture_default_str()
      ->check(IntAtLeast(0));
  AddParsed(command, "--gpu-compute", choice.gpu_compute, ParseGpuCompute,
            choice.gpu_compute == GpuCompute::kF32 ? "f32" : "bf16",
            "what f32 weights are multiplied in on the GPU: bf16 or f32 (f16/bf16 checkpoints "
            "use their own type; products accumulate in f32)");
  command
      ->add_option("--gpu-mem", choice.gpu_mem,
                   "GPU memory budget in bytes, K/M/G/T suffixes binary, e.g. 70G (default: "
                   "whatever the device has free)")
      ->type_name("SIZE")
      ->check(ByteSizeCheck());
  AddParsed(command, "--kv-offload", choice.kv_offload, ParseKvOffload,
            choice.kv_offload ? "cpu" : "none",
            "cuda: none, or cpu — the KV cache in DRAM and attention on the CPU, so device "
            "memory holds weights and the batch can grow");
  AddParsed(command, "--moe-experts", choice.moe_experts, ParseMoeExperts,
            MoeExpertsName(choice.moe_experts),
            "cuda, mixture of experts: where the experts device memory does not hold are "
            "computed — gpu (copied over PCIe when routed to), cpu (by the CPU from DRAM; only "
            "the routed rows cross PCIe) or auto (whichever the planner predicts faster)");
}

void AddSessionOptions(CLI::App* command, SessionOptions& options, const SessionFlags& flags) {
  command
      ->add_option("--routing-profile", options.routing_profile,
                   "mixture of experts: how often each expert is used, as `zinf generate "
                   "--save-routing` recorded it; the planner keeps the most used resident first "
                   "and predicts a step's expert reads from it (default: a uniform router)")
      ->type_name("FILE")
      ->check(CLI::ExistingFile);
  if (flags.batch_size) {
    AddParsed(command, "--batch-size", options.batch_size, ParseBatchSize,
              options.batch_size == 0 ? "auto" : std::to_string(options.batch_size),
              "sequences generated at once, or auto: the planner's best under the budgets");
  }
  if (flags.max_context) {
    command
        ->add_option("--max-context", options.max_context,
                     "positions (tokens: prompt plus generated) per sequence (default: the "
                     "model's, at most 4096)")
        ->check(IntAtLeast(1, "leave the flag out for the model's"));
  }
  if (flags.step_tokens) {
    command
        ->add_option("--step-tokens", options.step_tokens,
                     "most tokens per forward step (prompt chunks plus decode tokens)")
        ->capture_default_str()
        ->check(IntAtLeast(1));
  }
  if (flags.micro_batch_tokens) {
    command
        ->add_option("--micro-batch-tokens", options.micro_batch_tokens,
                     "tokens (rows) per micro-batch: each layer runs the step's micro-batches in "
                     "turn, so --step-tokens can exceed what the activations hold (0: one per "
                     "step)")
        ->capture_default_str()
        ->check(IntAtLeast(0));
  }
  command->add_option("--threads", options.threads, "CPU threads (default: all cores)")
      ->check(IntAtLeast(1, "leave the flag out for all cores"));
  AddParsed(command, "--kv-dtype", options.kv_dtype, ParseKvDtype,
            std::string(DTypeName(options.kv_dtype)),
            "KV cache dtype: f32; f16 (CPU: half the memory, and half the bytes attention reads); "
            "or int8 (a quarter of the memory: larger batches)");
  if (flags.weights) {
    AddParsed(command, "--weights", options.weights, ParseWeightsMode,
              WeightsModeName(options.weights),
              "auto (the planner places each extent under the budgets), resident (read once) or "
              "stream (re-read every step)");
  }
  command
      ->add_option(
          "--cpu-mem", options.cpu_mem,
          "DRAM budget in bytes for weights, staging, KV cache and activations, K/M/G/T "
          "suffixes binary, e.g. 24G (default: the memory available at start, less a reserve of "
          "1/16 of the machine's, at least 1 GiB)")
      ->type_name("SIZE")
      ->check(ByteSizeCheck());
  if (flags.prefetch_depth) {
    command
        ->add_option("--prefetch-depth", options.prefetch_depth,
                     "extents read ahead while one computes; the planner keeps resident what a "
                     "ring of that depth leaves room for (default: the plan's)")
        ->check(IntAtLeast(0, "leave the flag out for the plan's"));
  }
  AddDeviceOptions(command, options.device);
}

}  // namespace zinf::cli
