// zinf plan (--model DIR | --config CONFIG.json) [--cpu-mem SIZE] [workload]: prints where every
// extent would live and the predicted throughput, without running anything.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cmd/byte_size.h"
#include "cmd/calibration.h"
#include "cmd/commands.h"
#include "cmd/engine_session.h"
#include "engine/error.h"
#include "engine/planner/planner.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

struct PlanOptions {
  std::string model_dir;
  std::string config;
  std::string dtype = "f16";
  std::string cpu_mem;
  std::string gpu_mem;
  std::string device = "cpu";
  std::string batch_size = "8";
  std::string kv_dtype = "f32";
  std::string kv_offload = "none";
  Workload workload;
  Bandwidths bandwidths;
  bool rates_given = false;
};

// A checkpoint description without weights: what `convert` would write for this config.
Checkpoint CheckpointForConfig(const std::string& config_path, DType dtype) {
  Checkpoint checkpoint;
  checkpoint.config = formats::LoadHfConfig(config_path);
  // Quantized plans assume the converter's defaults: f16 norms, group 64, nothing kept in float.
  const formats::WeightEncoding encoding =
      formats::WeightEncoding::For(dtype, DType::kF16, 64, {});
  checkpoint.dtype = encoding.float_dtype;
  checkpoint.extents =
      formats::LayoutExtents(formats::ExpectedExtents(checkpoint.config), encoding);
  return checkpoint;
}

void PrintPlan(const Checkpoint& checkpoint, const PlannerInputs& inputs, const Plan& plan) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const ModelConfig& c = checkpoint.config;
  fmt::print("model      {} — {} layers, hidden {}, {} ({:.2f} GiB of weights)\n", c.model_type,
             c.num_layers, c.hidden_size, checkpoint.weights_description(),
             checkpoint.total_bytes() / kGiB);
  const bool cuda = inputs.backend == BackendKind::kCuda;
  if (cuda) {
    fmt::print("budget     --gpu-mem {:.2f} GiB, --cpu-mem {:.2f} GiB (device: cuda)\n",
               inputs.gpu_mem_bytes / kGiB, inputs.cpu_mem_bytes / kGiB);
  } else {
    fmt::print("budget     --cpu-mem {:.2f} GiB (device: cpu)\n", inputs.cpu_mem_bytes / kGiB);
  }
  fmt::print("workload   batch {}, context {}, step tokens {}, KV cache {}\n",
             inputs.workload.batch_size, inputs.workload.max_context, inputs.workload.step_tokens,
             DTypeName(inputs.workload.kv_dtype));
  if (cuda) {
    fmt::print("device     resident weights {:.2f} GiB + weight slots {:.2f} GiB + KV cache {:.2f} "
               "GiB + activations {:.2f} GiB = {:.2f} GiB\n",
               plan.resident_bytes / kGiB, plan.device_slot_bytes / kGiB,
               plan.device_kv_bytes() / kGiB, plan.activation_bytes / kGiB, plan.device_bytes / kGiB);
    fmt::print("DRAM       pinned weights {:.2f} GiB + staging {:.2f} GiB + offloaded KV cache "
               "{:.2f} GiB = {:.2f} GiB\n",
               plan.pinned_bytes / kGiB, plan.staging_bytes / kGiB,
               (plan.kv_bytes - plan.device_kv_bytes()) / kGiB, plan.total_dram_bytes() / kGiB);
  } else {
    fmt::print("memory     resident weights {:.2f} GiB + staging {:.2f} GiB + KV cache {:.2f} GiB "
               "+ activations {:.2f} GiB = {:.2f} GiB\n",
               plan.resident_bytes / kGiB, plan.staging_bytes / kGiB, plan.kv_bytes / kGiB,
               plan.activation_bytes / kGiB, plan.total_dram_bytes() / kGiB);
  }
  fmt::print("extents   ");
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    fmt::print(" {}:{}", checkpoint.extents[i].name, TierName(plan.placement[i]));
    if (i == 3 && checkpoint.extents.size() > 8) {
      fmt::print(" … ");
      i = checkpoint.extents.size() - 3;
    }
  }
  fmt::print("\n");
  const Bandwidths& bw = inputs.bandwidths;
  if (cuda) {
    fmt::print("rates      disk {:.1f} GB/s, PCIe {:.1f} GB/s, device memory {:.0f} GB/s, device "
               "{:.0f} TFLOP/s (assumed unless given: --disk-gbps/--pcie-gbps/--hbm-gbps/--tflops)\n",
               bw.disk_read_gbps, bw.h2d_gbps, bw.device_gbps, bw.device_tflops);
    fmt::print("per step   disk {:.3f} s, PCIe {:.3f} s, device memory {:.3f} s, compute {:.3f} s",
               plan.io_seconds_per_step, plan.h2d_seconds_per_step, plan.memory_seconds_per_step,
               plan.compute_seconds_per_step);
    if (plan.kv_tier == Tier::kDram) {
      fmt::print(", CPU attention {:.3f} s (after the GPU's, on its stream)",
                 plan.cpu_attention_seconds_per_step);
    }
    fmt::print("\n");
  } else {
    fmt::print("rates      disk {:.1f} GB/s, DRAM {:.1f} GB/s, compute {:.0f} GFLOP/s (int8 weights "
               "{:.0f}, int4 {:.0f}) ({})\n",
               bw.disk_read_gbps, bw.dram_read_gbps, bw.compute_gflops, bw.GflopsFor(DType::kI8),
               bw.GflopsFor(DType::kQ4),
               bw.measured ? "measured by zinf calibrate"
                           : "assumed: run zinf calibrate, or pass --disk-gbps/--dram-gbps/--gflops");
    fmt::print("per step   read from disk {:.3f} s, read from memory {:.3f} s, compute {:.3f} s\n",
               plan.io_seconds_per_step, plan.memory_seconds_per_step,
               plan.compute_seconds_per_step);
  }
  fmt::print("predicted  {:.1f} tokens/s decode, {}-bound\n", plan.predicted_tokens_per_s,
             BoundName(plan.bound));
  fmt::print("{}\n", plan.Summary());
}

void RunPlan(const PlanOptions& options) {
  if (options.model_dir.empty() == options.config.empty()) {
    Fail("give exactly one of --model DIR and --config CONFIG.json");
  }
  if (options.device != "cpu" && options.device != "cuda") {
    Fail("--device: '{}' is not one of cpu, cuda", options.device);
  }
  const std::optional<DType> dtype = ParseDType(options.dtype);
  if (!dtype) Fail("--dtype: '{}' is not one of f32, f16, bf16, int8, int4", options.dtype);
  const Checkpoint checkpoint = options.model_dir.empty()
                                    ? CheckpointForConfig(options.config, *dtype)
                                    : formats::LoadCheckpoint(options.model_dir);
  PlannerInputs inputs;
  inputs.checkpoint = &checkpoint;
  inputs.backend = options.device == "cuda" ? BackendKind::kCuda : BackendKind::kCpu;
  if (inputs.backend == BackendKind::kCuda) {
    if (options.gpu_mem.empty()) Fail("--device cuda needs --gpu-mem (e.g. 80G)");
    inputs.gpu_mem_bytes = ParseByteSize(options.gpu_mem, "--gpu-mem");
  }
  inputs.cpu_mem_bytes = options.cpu_mem.empty() ? PhysicalMemoryBytes()
                                                 : ParseByteSize(options.cpu_mem, "--cpu-mem");
  const uint64_t physical = PhysicalMemoryBytes();
  if (physical > 0 && inputs.cpu_mem_bytes > physical) {
    spdlog::warn("--cpu-mem {:.1f} GiB is more than this machine's {:.1f} GiB of memory",
                 inputs.cpu_mem_bytes / 1073741824.0, physical / 1073741824.0);
  }
  inputs.workload = options.workload;
  if (options.kv_dtype != "f32" && options.kv_dtype != "int8") {
    Fail("--kv-dtype: '{}' is not one of f32, int8", options.kv_dtype);
  }
  inputs.workload.kv_dtype = options.kv_dtype == "int8" ? DType::kI8 : DType::kF32;
  inputs.workload.kv_offload = ParseKvOffload(options.kv_offload, options.device);
  // Rates given as flags win; otherwise this machine's calibration, when one has run (its disk
  // rate serves CUDA plans too; the device rates stay as given or assumed).
  inputs.bandwidths = options.bandwidths;
  if (!options.rates_given) {
    if (std::optional<Bandwidths> measured = LoadCalibration()) {
      const Bandwidths device = inputs.bandwidths;
      inputs.bandwidths = *measured;
      inputs.bandwidths.h2d_gbps = device.h2d_gbps;
      inputs.bandwidths.device_gbps = device.device_gbps;
      inputs.bandwidths.device_tflops = device.device_tflops;
    }
  }
  const int batch_size = ParseBatchSize(options.batch_size);
  if (batch_size == 0) {
    const BatchChoice choice = ChooseBatchSize(inputs, 256);
    fmt::print("{}\n", choice.why);
    inputs.workload.batch_size = choice.batch_size;
    inputs.workload.step_tokens = std::max(inputs.workload.step_tokens, choice.batch_size);
    PrintPlan(checkpoint, inputs, choice.plan);
    return;
  }
  inputs.workload.batch_size = batch_size;
  PrintPlan(checkpoint, inputs, MakePlan(inputs));
}

}  // namespace

void AddPlanCommand(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* command = app.add_subcommand(
      "plan", "Print where each extent would live under the budgets, and the predicted speed");
  command->add_option("--model", options->model_dir, "converted zinf checkpoint directory");
  command->add_option("--config", options->config, "a Hugging Face config.json (see configs/)");
  command->add_option("--dtype", options->dtype, "weight dtype assumed with --config")
      ->capture_default_str();
  command->add_option("--cpu-mem", options->cpu_mem,
                      "DRAM budget, e.g. 24G (default: this machine's memory)");
  command->add_option("--device", options->device, "cpu or cuda")->capture_default_str();
  command->add_option("--gpu-mem", options->gpu_mem, "device memory budget with --device cuda, e.g. 80G");
  command->add_option("--batch-size", options->batch_size, "a size, or auto: the planner's best")
      ->capture_default_str();
  command->add_option("--max-context", options->workload.max_context)->capture_default_str();
  command->add_option("--step-tokens", options->workload.step_tokens)->capture_default_str();
  command->add_option("--kv-dtype", options->kv_dtype, "KV cache dtype: f32 or int8")
      ->capture_default_str();
  command->add_option("--kv-offload", options->kv_offload,
                      "cuda: none, or cpu (KV cache in DRAM, attention on the CPU)")
      ->capture_default_str();
  CLI::Option* disk = command->add_option("--disk-gbps", options->bandwidths.disk_read_gbps,
                                          "disk read rate (default: zinf calibrate's)");
  CLI::Option* dram = command->add_option("--dram-gbps", options->bandwidths.dram_read_gbps,
                                          "DRAM read rate (default: zinf calibrate's)");
  CLI::Option* gflops = command->add_option(
      "--gflops", options->bandwidths.compute_gflops,
      "compute rate, for every weight dtype (default: zinf calibrate's, per dtype)");
  CLI::Option* pcie = command->add_option("--pcie-gbps", options->bandwidths.h2d_gbps,
                                          "pinned host-to-device copy rate (cuda)")
                           ->capture_default_str();
  CLI::Option* hbm = command->add_option("--hbm-gbps", options->bandwidths.device_gbps,
                                         "device-memory read rate (cuda)")
                          ->capture_default_str();
  CLI::Option* tflops = command->add_option("--tflops", options->bandwidths.device_tflops,
                                            "device matmul rate (cuda)")
                             ->capture_default_str();
  command->callback([options, disk, dram, gflops, pcie, hbm, tflops] {
    options->rates_given = disk->count() + dram->count() + gflops->count() + pcie->count() +
                           hbm->count() + tflops->count() > 0;
    RunPlan(*options);
  });
}

}  // namespace zinf::cli
