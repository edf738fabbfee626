// zinf plan (--model DIR | --config CONFIG.json) [--cpu-mem SIZE] [workload]: prints where every
// extent would live and the predicted throughput, without running anything.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>
#include <optional>

#include "cmd/commands.h"
#include "cmd/flag_checks.h"
#include "cmd/job_context.h"
#include "cmd/plan_json.h"
#include "cmd/prompt_file.h"
#include "cmd/session_plan.h"
#include "engine/byte_units.h"
#include "engine/error.h"
#include "engine/layer_parts.h"
#include "engine/planner/planner.h"
#include "engine/request.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/checkpoint_chat_template.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

struct PlanOptions {
  std::string model_dir;
  std::string config;
  std::string dtype = "f16";
  std::string json_path;
  std::string prompts;
  std::string shard;  // --shard K/N
  // What generate would run the prompts with: their context is read off them as it reads it.
  int max_new_tokens = Request{}.max_new_tokens;
  std::string chat_template = "auto";
  SessionOptions session;
};

// A checkpoint description without weights: what `convert` would write for this config.
Checkpoint CheckpointForConfig(const std::string& config_path, DType dtype) {
  Checkpoint checkpoint;
  checkpoint.config = formats::LoadHfConfig(config_path);
  // Quantized plans assume the converter's defaults: f16 norms, group 64, nothing kept in float.
  const formats::WeightEncoding encoding = formats::WeightEncoding::For(dtype, DType::kF16, 64, {});
  checkpoint.dtype = encoding.float_dtype;
  checkpoint.extents =
      formats::LayoutExtents(formats::ExpectedExtents(checkpoint.config), encoding);
  // As converted today: every tensor with its own checksum (its value unknown, and not needed to
  // plan), so layers split into parts as a converted file's do.
  for (ExtentInfo& extent : checkpoint.extents) {
    for (TensorInfo& tensor : extent.tensors) tensor.xxh3 = 0;
  }
  return WithLayerParts(std::move(checkpoint));
}

// A mixture of experts: how many of them a step is expected to use, and where they are.
void PrintExperts(const Checkpoint& checkpoint, const PlannerInputs& inputs, const Plan& plan) {
  const ModelConfig& c = checkpoint.config;
  int sparse_layers = 0;
  for (int layer = 0; layer < c.num_layers; ++layer) sparse_layers += c.IsMoeLayer(layer);
  const int tokens = std::max(inputs.workload.batch_size, 1);
  const double share = RoutedShare(c, tokens);
  uint64_t expert_bytes = 0, held_bytes = 0;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    if (checkpoint.extents[i].kind != ExtentKind::kExpert) continue;
    expert_bytes += checkpoint.extents[i].padded_bytes;
    if (plan.placement[i] == Tier::kDevice) held_bytes += checkpoint.extents[i].padded_bytes;
  }
  fmt::print("experts    {} per layer in {} of {} layers, {} per token{}{}: a step of {} tokens "
             "routes to {:.1f} per layer ({:.0f}%, uniform router): {} of {} of expert weights; "
             "{} held in {}\n",
             c.moe.num_experts, sparse_layers, c.num_layers, c.moe.experts_per_token,
             c.moe.shared_expert_ffn > 0 ? " + a shared expert" : "",
             c.moe.normalize_top_k ? " (weights renormalised)" : "", tokens,
             c.moe.num_experts * share, 100 * share,
             FormatBytes(static_cast<uint64_t>(expert_bytes * share)), FormatBytes(expert_bytes),
             FormatBytes(held_bytes), TierPlace(Tier::kDevice, inputs.backend));
  if (inputs.routing == nullptr) return;
  // The profile's view: each expert used by a step with probability 1 − (1 − p)^tokens.
  double profiled_bytes = 0, held_share = 0, total_share = 0;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    const ExtentInfo& extent = checkpoint.extents[i];
    if (extent.kind != ExtentKind::kExpert) continue;
    const double p = std::min(1.0, inputs.routing->TokenShare(extent.layer, extent.expert));
    profiled_bytes += extent.padded_bytes * (1 - std::pow(1 - p, tokens));
    total_share += p;
    if (plan.placement[i] == Tier::kDevice) held_share += p;
  }
  fmt::print("routing    from --routing-profile: a step of {} tokens uses {} of expert weights "
             "(uniform router: {}); the experts held in {} take {:.0f}% of the routed tokens\n",
             tokens, FormatBytes(static_cast<uint64_t>(profiled_bytes)),
             FormatBytes(static_cast<uint64_t>(expert_bytes * share)),
             TierPlace(Tier::kDevice, inputs.backend),
             total_share > 0 ? 100 * held_share / total_share : 0.0);
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
  if (c.is_moe()) PrintExperts(checkpoint, inputs, plan);
  if (cuda) {
    fmt::print("device     resident weights {:.2f} GiB + weight slots {:.2f} GiB + KV cache {:.2f} "
               "GiB + activations {:.2f} GiB = {:.2f} GiB\n",
               plan.resident_bytes / kGiB, plan.device_slot_bytes / kGiB,
               plan.device_kv_bytes() / kGiB, plan.activation_bytes / kGiB,
               plan.device_bytes / kGiB);
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
    fmt::print(" {}:{}", checkpoint.extents[i].name, TierPlace(plan.placement[i], inputs.backend));
    if (i == 3 && checkpoint.extents.size() > 8) {
      fmt::print(" … ");
      i = checkpoint.extents.size() - 3;
    }
  }
  fmt::print("\n");
  const Bandwidths& bw = inputs.bandwidths;
  if (cuda) {
    fmt::print("rates      disk {:.1f} GB/s, PCIe {:.1f} GB/s, device memory {:.0f} GB/s, device "
               "{:.0f} TFLOP/s ({})\n",
               bw.disk_read_gbps, bw.h2d_gbps, bw.device_gbps, bw.device_tflops,
               bw.gpu_measured
                   ? "zinf calibrate's, or --disk-gbps/--pcie-gbps/--hbm-gbps/--tflops"
                   : "assumed unless given: --disk-gbps/--pcie-gbps/--hbm-gbps/--tflops, or run "
                     "zinf calibrate");
    fmt::print("kernels    {}\n", GpuKernelCosts(bw));
    fmt::print("per step   disk {:.3f} s, PCIe {:.3f} s, device memory {:.3f} s, compute {:.3f} s, "
               "launches {:.3f} s, attention {:.3f} s, dequantisation {:.3f} s, logits {:.3f} s",
               plan.io_seconds_per_step, plan.h2d_seconds_per_step, plan.memory_seconds_per_step,
               plan.compute_seconds_per_step, plan.launch_seconds_per_step,
               plan.gpu_attention_seconds_per_step, plan.dequant_seconds_per_step,
               plan.logits_seconds_per_step);
    if (plan.kv_tier == Tier::kDram) {
      fmt::print(", CPU attention {:.3f} s (after the GPU's, on its stream)",
                 plan.cpu_attention_seconds_per_step);
    }
    if (plan.placement.host_computes_experts) {
      fmt::print(", CPU experts {:.3f} s (DRAM {:.1f} GB/s; after the GPU's, on its stream)",
                 plan.cpu_experts_seconds_per_step, bw.dram_read_gbps);
    }
    if (plan.checksum_seconds_per_step > 0) {
      fmt::print(", verify checksums {:.3f} s (on a host thread, as the reads land)",
                 plan.checksum_seconds_per_step);
    }
    fmt::print("\n");
  } else {
    const int rows = std::max(inputs.workload.batch_size, 1);
    fmt::print(
        "rates      disk {:.1f} GB/s, DRAM {:.1f} GB/s, products of {} token{} {:.0f} GFLOP/s "
        "(f16 weights {:.0f}, int8 {:.0f}, int4 in groups of 32/64/128 {:.0f}/{:.0f}/{:.0f}), "
        "attention {:.0f} ({})\n",
        bw.disk_read_gbps, bw.dram_read_gbps, rows, rows == 1 ? "" : "s",
        bw.GflopsFor(DType::kF32, rows), bw.GflopsFor(DType::kF16, rows),
        bw.GflopsFor(DType::kI8, rows), bw.GflopsFor(DType::kQ4, rows, 32),
        bw.GflopsFor(DType::kQ4, rows, 64), bw.GflopsFor(DType::kQ4, rows, 128),
        bw.CpuAttentionGflops(),
        !bw.measured ? "assumed: run zinf calibrate, or pass --disk-gbps/--dram-gbps/--gflops"
        : bw.cpu_threads > 0 ? fmt::format("measured by zinf calibrate with {} thread{}",
                                           bw.cpu_threads, bw.cpu_threads == 1 ? "" : "s")
                             : std::string("measured by zinf calibrate"));
    fmt::print("per step   read from disk {:.3f} s; read from memory {:.3f} s or compute {:.3f} "
               "s, then attention {:.3f} s (over {} positions a sequence); verify checksums "
               "{:.3f} s ({})\n",
               plan.io_seconds_per_step, plan.memory_seconds_per_step,
               plan.compute_seconds_per_step, plan.cpu_attention_seconds_per_step,
               inputs.workload.attended_context(), plan.checksum_seconds_per_step,
               inputs.workload.spare_cores > 0 ? "on a spare core"
                                               : "on a thread sharing the compute's cores");
  }
  fmt::print("predicted  {} tokens/s decode, {}-bound\n", FormatRate(plan.predicted_tokens_per_s),
             BoundName(plan.bound));
  fmt::print("{}\n", plan.Summary());
}

void RunPlan(const PlanOptions& options) {
  if (options.model_dir.empty() == options.config.empty()) {
    Fail("give exactly one of --model DIR and --config CONFIG.json");
  }
  const std::optional<DType> dtype = ParseDType(options.dtype);
  if (!dtype) Fail("--dtype: '{}' is not one of f32, f16, bf16, int8, int4", options.dtype);
  const Checkpoint checkpoint = options.model_dir.empty()
                                    ? CheckpointForConfig(options.config, *dtype)
                                    : WithLayerParts(formats::LoadCheckpoint(options.model_dir));
  // The same planning `generate` does with these flags (cmd/session_plan.h), which sizes
  // --batch-size auto to the prompts it has.
  SessionOptions session = options.session;
  if (!options.prompts.empty()) {
    // A task of a job array plans for its shard's requests, as its generate does.
    PromptFileOptions prompt_options;
    if (!options.shard.empty() && options.shard != "none") {
      prompt_options.shard = ParseShard(options.shard);
    }
    std::unique_ptr<Tokenizer> tokenizer;
    if (checkpoint.tokenizer) tokenizer = formats::LoadCheckpointTokenizer(checkpoint);
    const formats::ChatTemplates chat_templates =
        options.model_dir.empty()
            ? formats::ChatTemplates::Load("none", {})
            : formats::ChatTemplates::Load(options.chat_template, options.model_dir);
    Request defaults;
    defaults.max_new_tokens = options.max_new_tokens;
    JobContextTally tally(tokenizer.get(), chat_templates, defaults, std::time(nullptr));
    PromptFileReader reader(options.prompts, prompt_options);
    while (std::optional<PromptEntry> entry = reader.Next()) tally.Add(*entry);
    const JobContext job = tally.result();
    session.max_auto_batch = MaxAutoBatchFor(static_cast<size_t>(job.entries));
    ApplyJobContext(job, session);
    if (job.requests > 0) fmt::print("job        {}\n", DescribeJobContext(job));
  }
  const SessionPlan planned = PlanSession(checkpoint, session);
  if (!planned.batch_choice.empty()) fmt::print("{}\n", planned.batch_choice);
  PrintPlan(checkpoint, planned.inputs, planned.plan);
  if (!options.json_path.empty()) {
    formats::WriteFileAtomically(
        options.json_path, PlanJson(planned.plan, planned.limits.max_sequences).dump(2) + "\n");
  }
}

}  // namespace

void AddPlanCommand(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* command = app.add_subcommand(
      "plan", "Print where each extent would live under the budgets, and the predicted speed");
  command->add_option("--model", options->model_dir, "converted zinf checkpoint directory");
  command->add_option("--config", options->config, "a Hugging Face config.json (see configs/)");
  command->add_option("--dtype", options->dtype, "weight dtype assumed with --config")
      ->capture_default_str()
      ->check(OneOf({"f32", "f16", "bf16", "int8", "int4"}));
  command->add_option("--json", options->json_path,
                      "also write the plan as JSON here (what generate's --metrics-json embeds)");
  command->add_option("--prompts", options->prompts,
                      "the prompt file generate would run: --batch-size auto takes no more "
                      "sequences than it has prompts ('-': stdin)");
  command
      ->add_option("--shard", options->shard,
                   "K/N: count only shard K of N of --prompts, as generate --shard runs it")
      ->check(ShardCheck());
  command
      ->add_option("--max-new-tokens", options->max_new_tokens,
                   "with --prompts: generate's --max-new-tokens, which with each prompt's length "
                   "sizes the KV cache and the attention time as generate does")
      ->capture_default_str()
      ->check(SettingCheck(RequestSetting::kMaxNewTokens));
  command
      ->add_option("--chat-template", options->chat_template,
                   "with --prompts: generate's --chat-template, rendering \"messages\" prompts")
      ->capture_default_str();
  // generate's defaults, batch size and context included: the plan printed is the plan run.
  AddSessionOptions(command, options->session);
  RateOverrides& rates = options->session.rates;
  const auto rate = [&](const char* name, std::optional<double>& target, const char* help) {
    command
        ->add_option_function<double>(
            name, [&target](double value) { target = value; }, help)
        ->check(PositiveNumber());
  };
  rate("--disk-gbps", rates.disk_gbps, "disk read rate in GB/s (default: zinf calibrate's)");
  rate("--dram-gbps", rates.dram_gbps, "DRAM read rate in GB/s (default: zinf calibrate's)");
  rate("--gflops", rates.gflops,
       "compute rate in GFLOP/s, for every weight dtype (default: zinf calibrate's, per dtype)");
  rate("--pcie-gbps", rates.pcie_gbps,
       "pinned host-to-device copy rate in GB/s (cuda; default 25)");
  rate("--hbm-gbps", rates.hbm_gbps, "device-memory read rate in GB/s (cuda; default 3000)");
  rate("--tflops", rates.tflops, "device matmul rate in TFLOP/s (cuda; default 400)");
  command->callback([options] { RunPlan(*options); });
}

}  // namespace zinf::cli
