// MakePlan for the CPU backend: keep what fits in DRAM resident (the embeddings first: they are
// read whole when streamed but only a few rows are used), stream the rest from NVMe through a ring
// of prefetch_depth + 1 staging buffers, and predict the decode rate from the three bounds.
#include "engine/planner/planner.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "engine/error.h"
#include "engine/planner/planner_detail.h"
#include "engine/planner/step_pipeline.h"

namespace zinf {

using planner_detail::ResidencyOrder;

namespace {

// The largest extent still streamed: the staging buffer size.
uint64_t LargestStreamed(const std::vector<ExtentInfo>& extents,
                         const std::vector<Tier>& placement) {
  return planner_detail::LargestOn(extents, placement, Tier::kNvme);
}

// Resident extents (Tier::kDevice: in the CPU's memory) by planner_detail::KeepGreedily, the rest
// streamed through `buffers` staging buffers, within `room` (the budget less KV cache and
// activations). nullopt when the extents larger than `cap` and their ring do not fit.
std::optional<std::vector<Tier>> GreedyPlacement(const std::vector<ExtentInfo>& extents,
                                                 const std::vector<size_t>& order, uint64_t cap,
                                                 int buffers, uint64_t room) {
  std::vector<Tier> placement(extents.size(), Tier::kNvme);
  if (!planner_detail::KeepGreedily(extents, order, cap, planner_detail::RingOf(buffers), room,
                                    Tier::kDevice, Tier::kNvme, placement)) {
    return std::nullopt;
  }
  return placement;
}

// Streamed bytes per decode step (of batch_size tokens): experts at their expected routed share.
void CountBytes(const PlannerInputs& inputs, Plan& plan) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const int tokens = std::max(inputs.workload.batch_size, 1);
  plan.resident_bytes = 0;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    if (plan.placement[i] != Tier::kNvme) plan.resident_bytes += checkpoint.extents[i].padded_bytes;
  }
  plan.streamed_bytes_per_step = static_cast<uint64_t>(planner_detail::StepBytesOn(
      checkpoint, inputs.routing, plan.placement.tiers, Tier::kNvme, tokens));
}

// The staging ring: depth + 1 buffers, and for a model with experts on disk, room for the
// experts a step routes to.
void SetStaging(const PlannerInputs& inputs, int depth, Plan& plan) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  bool experts_streamed = false;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    experts_streamed |=
        checkpoint.extents[i].kind == ExtentKind::kExpert && plan.placement[i] == Tier::kNvme;
  }
  plan.placement.prefetch_depth = depth;
  plan.placement.expert_buffers =
      experts_streamed
          ? planner_detail::ExpertStagingBuffers(checkpoint.config, inputs.workload.batch_size)
          : 0;
  plan.placement.staging_buffers = depth + 1 + plan.placement.expert_buffers;
  plan.placement.staging_buffer_bytes = LargestStreamed(checkpoint.extents, plan.placement.tiers);
  plan.staging_bytes = plan.placement.staging_bytes();
}

// The step's length from walking its extents through the staging ring (step_pipeline.h): reads at
// the disk's rate, the step's `work` shared among the extents as their products and attention are
// (the checksums, where they count, spread with it). Dense models only: a mixture of experts'
// reads depend on routing.
double PipelinedStep(const PlannerInputs& inputs, const Plan& plan, double work) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const Bandwidths& bw = inputs.bandwidths;
  const int batch = std::max(inputs.workload.batch_size, 1);
  const bool memory_bound = plan.memory_seconds_per_step > plan.compute_seconds_per_step;
  const double attention_per_layer =
      plan.cpu_attention_seconds_per_step / std::max(checkpoint.config.num_layers, 1);
  // Each extent's share of the products is its share of them in memory or arithmetic, whichever
  // binds; the shares are then scaled so the walk's work is the step's.
  std::vector<planner_detail::PipelineExtent> walk(checkpoint.extents.size());
  double unscaled = 0;
  for (size_t i = 0; i < walk.size(); ++i) {
    const ExtentInfo& extent = checkpoint.extents[i];
    const double bytes = planner_detail::StepBytes(checkpoint, inputs.routing, i, batch);
    if (extent.kind != ExtentKind::kEmbedding) {
      walk[i].work_seconds =
          memory_bound ? bytes / (bw.dram_read_gbps * 1e9)
                       : planner_detail::ExtentMatmulSeconds(checkpoint, extent, batch, bw);
    }
    if (extent.kind == ExtentKind::kLayer && extent.part != LayerPart::kMlp) {
      walk[i].work_seconds += attention_per_layer;
    }
    unscaled += walk[i].work_seconds;
    walk[i].streamed = plan.placement.tiers[i] == Tier::kNvme;
    if (walk[i].streamed) walk[i].read_seconds = bytes / (bw.disk_read_gbps * 1e9);
  }
  const double scale = unscaled > 0 ? work / unscaled : 0;
  for (planner_detail::PipelineExtent& extent : walk) extent.work_seconds *= scale;
  return planner_detail::PipelinedStepSeconds(walk, plan.placement.prefetch_depth);
}

void Predict(const PlannerInputs& inputs, Plan& plan) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const Bandwidths& bw = inputs.bandwidths;
  const int batch = std::max(inputs.workload.batch_size, 1);
  plan.io_seconds_per_step = plan.streamed_bytes_per_step / (bw.disk_read_gbps * 1e9);
  // Every weight byte a step uses (of experts, the routed ones) is read from memory once per
  // step by the products; the KV cache is read by attention, which runs after them in each layer
  // (a bench of 128 sequences at 336 positions: TinyLlama int8 decode 1.2x slower than at 32).
  const double weight_bytes = planner_detail::StepBytesUsed(checkpoint, inputs.routing, batch);
  plan.memory_seconds_per_step = weight_bytes / (bw.dram_read_gbps * 1e9);
  plan.compute_seconds_per_step = planner_detail::CpuMatmulSeconds(checkpoint, batch, bw);
  plan.cpu_attention_seconds_per_step =
      planner_detail::CpuAttentionSeconds(checkpoint.config, inputs.workload, plan.kv_bytes, bw);
  plan.checksum_seconds_per_step = plan.streamed_bytes_per_step / (bw.checksum_gbps * 1e9);
  const double products = std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step);
  const double checks_in_work =
      inputs.workload.spare_cores > 0 ? 0.0 : plan.checksum_seconds_per_step;
  const double work = std::max(plan.checksum_seconds_per_step,
                               checks_in_work + products + plan.cpu_attention_seconds_per_step);
  // With prefetching, reads overlap compute; without it, each extent is read, then computed.
  const bool overlapped = plan.placement.prefetch_depth > 0 || plan.streamed_bytes_per_step == 0;
  double step =
      overlapped ? std::max(plan.io_seconds_per_step, work) : plan.io_seconds_per_step + work;
  // Only as far as the ring lets reads run ahead: a stretch of resident layers' work can outlast
  // the reads queued before it, and the disk then idles while the steps' work waits elsewhere.
  if (plan.streamed_bytes_per_step > 0 && !checkpoint.config.is_moe())
    step = std::max(step, PipelinedStep(inputs, plan, work));
  plan.predicted_tokens_per_s = step > 0 ? batch / step : 0;
  // The bound names what sets the step's length: with prefetching the reads when they outlast the
  // layers' work, else the largest part of that work; without it, the largest part of all.
  const double attention = plan.cpu_attention_seconds_per_step;
  const double checks = plan.checksum_seconds_per_step;
  const double largest_work = std::max({products, attention, checks});
  if (plan.io_seconds_per_step >= (overlapped ? work : largest_work)) {
    plan.bound = Bound::kDisk;
  } else if (largest_work == checks) {
    plan.bound = Bound::kChecksum;
  } else if (largest_work == attention) {
    plan.bound = Bound::kCpuAttention;
  } else if (largest_work == plan.memory_seconds_per_step) {
    plan.bound = Bound::kMemory;
  } else {
    plan.bound = Bound::kCompute;
  }
}

}  // namespace

const char* BoundName(Bound bound) {
  switch (bound) {
    case Bound::kDisk: return "disk";
    case Bound::kMemory: return "memory";
    case Bound::kCompute: return "compute";
    case Bound::kPcie: return "pcie";
    case Bound::kHbm: return "hbm";
    case Bound::kCpuAttention: return "cpu-attention";
    case Bound::kCpuExperts: return "cpu-experts";
    case Bound::kLaunch: return "launch";
    case Bound::kGpuAttention: return "gpu-attention";
    case Bound::kDequant: return "dequant";
    case Bound::kHostLogits: return "host-logits";
    case Bound::kChecksum: return "checksums";
  }
  return "?";
}

const TokenRates& Bandwidths::ByTokens(DType weights, int group_size) const {
  switch (weights) {
    case DType::kF16:
    case DType::kBF16: return f16_by_tokens;
    case DType::kI8: return int8_by_tokens;
    case DType::kQ4: {
      const TokenRates& by_group = group_size == 32    ? int4_g32_by_tokens
                                   : group_size == 128 ? int4_g128_by_tokens
                                                       : int4_by_tokens;
      return by_group.empty() ? int4_by_tokens : by_group;
    }
    case DType::kF32: break;
  }
  return f32_by_tokens;
}

double Bandwidths::GflopsFor(DType weights, double tokens, int group_size) const {
  const TokenRates& measured = ByTokens(weights, group_size);
  if (!measured.empty()) return measured.At(tokens);
  const double quantized = weights == DType::kI8   ? int8_gflops
                           : weights == DType::kQ4 ? int4_gflops
                                                   : 0.0;
  return quantized > 0 ? quantized : compute_gflops;
}

std::string GpuKernelCosts(const Bandwidths& rates) {
  return fmt::format(
      "a layer's launches {:.0f} us, attention {:.2f} us per key alone and {:.2f} in a wave of {} "
      "walks, dequantisation to bf16 {:.1f} / {:.1f} ps per int8 / int4 weight, logits to the "
      "host {:.1f} GB/s and picked in {:.2f} ns each",
      rates.gpu_layer_launch_seconds * 1e6, rates.gpu_attention_lone_key_seconds * 1e6,
      rates.gpu_attention_key_seconds * 1e6, rates.gpu_attention_wave_blocks,
      rates.gpu_dequant_i8_seconds * 1e12, rates.gpu_dequant_q4_seconds * 1e12,
      rates.gpu_logits_d2h_gbps, rates.host_sample_seconds_per_logit * 1e9);
}

const char* MoeExpertsName(MoeExperts where) {
  switch (where) {
    case MoeExperts::kAuto: return "auto";
    case MoeExperts::kGpu: return "gpu";
    case MoeExperts::kCpu: return "cpu";
  }
  return "?";
}

ModelLimits Workload::limits() const {
  ModelLimits limits;
  limits.max_sequences = batch_size;
  limits.max_context = max_context;
  limits.max_tokens_per_step = step_tokens;
  limits.max_logit_rows = logit_rows;
  limits.kv_dtype = kv_dtype;
  limits.micro_batch_tokens = micro_batch_tokens;
  return limits;
}

uint64_t KvCacheBytes(const ModelConfig& config, const Workload& workload) {
  return CpuKvCacheBytes(KvShapeFor(config, workload.limits()));
}

uint64_t ActivationBytes(const ModelConfig& config, const Workload& workload) {
  return ActivationBytes(config, workload.limits());
}

Plan MakePlan(const PlannerInputs& inputs) {
  ZINF_CHECK(inputs.checkpoint != nullptr, "planner without a checkpoint");
  if (inputs.backend == BackendKind::kCuda) return MakeCudaPlan(inputs);
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const std::vector<ExtentInfo>& extents = checkpoint.extents;
  Plan plan;
  plan.placement.backend = BackendKind::kCpu;
  plan.placement.tiers.assign(extents.size(), Tier::kDevice);
  plan.kv_tier = Tier::kDevice;
  plan.kv_bytes = KvCacheBytes(checkpoint.config, inputs.workload);
  plan.activation_bytes = ActivationBytes(checkpoint.config, inputs.workload);
  const uint64_t budget = inputs.cpu_mem_bytes;
  const uint64_t fixed = plan.kv_bytes + plan.activation_bytes;

  if (checkpoint.total_bytes() + fixed <= budget) {
    plan.resident_bytes = checkpoint.total_bytes();
    Predict(inputs, plan);
    return plan;  // everything fits: offload is pointless
  }

  // For each prefetch depth and each cap on the staging buffer's size: keep every extent larger
  // than the cap resident, then greedily keep further extents resident while the resident bytes,
  // the staging ring sized to the largest extent still streamed, and the fixed costs fit
  // (planner_detail::KeepGreedily). A deeper ring costs DRAM that residency could use, so the plan
  // that predicts the most tokens/s wins (on a tie, the deeper ring: it absorbs jitter in read
  // times; then the larger cap, the plain greedy pass).
  plan.offload_needed = true;
  const std::vector<size_t> order = ResidencyOrder(extents, inputs.routing);
  const std::vector<uint64_t> caps = planner_detail::DistinctSizes(extents, order);
  const uint64_t room = budget - std::min(budget, fixed);  // for resident extents and staging
  // Experts' buffers are counted whether or not any expert ends up streamed (conservative).
  const int expert_buffers =
      planner_detail::ExpertStagingBuffers(checkpoint.config, inputs.workload.batch_size);
  std::optional<Plan> best;
  for (int depth = inputs.max_prefetch_depth; depth >= inputs.min_prefetch_depth; --depth) {
    for (uint64_t cap : caps) {
      const std::optional<std::vector<Tier>> placement =
          GreedyPlacement(extents, order, cap, depth + 1 + expert_buffers, room);
      if (!placement) continue;
      plan.placement.tiers = *placement;
      SetStaging(inputs, depth, plan);
      CountBytes(inputs, plan);
      Predict(inputs, plan);
      if (!best || plan.predicted_tokens_per_s > best->predicted_tokens_per_s) best = plan;
    }
  }
  if (best) return *best;
  // Any placement needs staging for its largest streamed extent or holds that extent resident.
  const uint64_t largest = checkpoint.max_extent_padded_bytes();
  Fail("--cpu-mem {} is too small: streaming needs at least {} — KV cache {} (batch {} × "
       "context {}) + activations {} + one staging buffer of {} (the largest extent); lower "
       "--batch-size or --max-context, or raise --cpu-mem",
       FormatBytesBeside(budget, fixed + largest), FormatBytesBeside(fixed + largest, budget),
       FormatBytes(plan.kv_bytes), inputs.workload.batch_size, inputs.workload.max_context,
       FormatBytes(plan.activation_bytes), FormatBytes(largest));
}

Plan EvaluatePlacement(const PlannerInputs& inputs, std::vector<Tier> placement,
                       int prefetch_depth) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  ZINF_CHECK(placement.size() == checkpoint.extents.size(), "{} placements for {} extents",
             placement.size(), checkpoint.extents.size());
  if (inputs.backend == BackendKind::kCuda) {
    return EvaluateCudaPlacement(inputs, std::move(placement), prefetch_depth);
  }
  Plan plan;
  plan.placement.backend = BackendKind::kCpu;
  plan.placement.tiers = std::move(placement);
  plan.kv_bytes = KvCacheBytes(checkpoint.config, inputs.workload);
  plan.activation_bytes = ActivationBytes(checkpoint.config, inputs.workload);
  CountBytes(inputs, plan);
  plan.offload_needed = std::count(plan.placement.begin(), plan.placement.end(), Tier::kNvme) > 0;
  if (plan.offload_needed) SetStaging(inputs, prefetch_depth, plan);
  Predict(inputs, plan);
  return plan;
}

Plan PlaceEveryExtent(const PlannerInputs& inputs, Tier tier, int prefetch_depth) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  Plan plan =
      EvaluatePlacement(inputs, std::vector<Tier>(checkpoint.extents.size(), tier), prefetch_depth);
  if (plan.on_cuda() || plan.total_dram_bytes() <= inputs.cpu_mem_bytes) return plan;
  Fail("--weights {}: batch {} × context {} needs {} of DRAM — weights {}, staging {}, KV cache "
       "{}, activations {} — more than the {} budget (--cpu-mem, or this machine's memory); "
       "lower --batch-size or --max-context, or let the planner stream weights (--weights auto)",
       tier == Tier::kNvme ? "stream" : "resident", inputs.workload.batch_size,
       inputs.workload.max_context,
       FormatBytesBeside(plan.total_dram_bytes(), inputs.cpu_mem_bytes),
       FormatBytes(plan.resident_bytes), FormatBytes(plan.staging_bytes),
       FormatBytes(plan.kv_bytes), FormatBytes(plan.activation_bytes),
       FormatBytesBeside(inputs.cpu_mem_bytes, plan.total_dram_bytes()));
}

BatchChoice ChooseBatchSize(const PlannerInputs& inputs, int max_batch,
                            const std::function<Plan(const PlannerInputs&)>& plan_for) {
  std::vector<std::pair<int, Plan>> candidates;
  std::string tried;
  for (int batch = 1; batch <= std::max(max_batch, 1); batch *= 2) {
    PlannerInputs candidate = inputs;
    candidate.workload.batch_size = batch;
    candidate.workload.step_tokens = std::max(inputs.workload.step_tokens, batch);
    try {
      candidates.emplace_back(batch, plan_for(candidate));
      tried +=
          fmt::format(" {}:{}", batch, FormatRate(candidates.back().second.predicted_tokens_per_s));
    } catch (const Error& error) {
      if (candidates.empty()) throw;
      tried += fmt::format(" {}:does-not-fit", batch);
      break;  // larger batches need more memory still
    }
  }
  double best = 0;
  for (const auto& [batch, plan] : candidates) best = std::max(best, plan.predicted_tokens_per_s);
  // Among the batches within 3% of the best: on a GPU the smallest, which leaves the most device
  // memory to resident layers. On the CPU the largest: the prediction turns flat once the
  // products are the bound, but measured decode keeps rising well past that point (int8
  // TinyLlama, AMD EPYC Zen 3, 2 threads: 44, 58, 63 tok/s at batch 4, 16, 32 where 48 was
  // predicted for each), as the per-step work the model leaves out is shared by more tokens; a
  // batch that costs resident weights predicts less and drops out of the 3% by itself.
  const bool prefer_largest = inputs.backend == BackendKind::kCpu;
  const std::pair<int, Plan>* chosen = nullptr;
  for (const auto& candidate : candidates) {
    if (candidate.second.predicted_tokens_per_s < 0.97 * best) continue;
    chosen = &candidate;
    if (!prefer_largest) break;
  }
  ZINF_CHECK(chosen != nullptr, "no batch candidate");
  return {chosen->first, chosen->second,
          fmt::format("batch size {} (auto): predicted decode tok/s by batch{}; the {} within 3% "
                      "of the best, {}-bound",
                      chosen->first, tried, prefer_largest ? "largest" : "smallest",
                      BoundName(chosen->second.bound))};
}

std::string Plan::Summary() const {
  if (on_cuda()) return CudaSummary(*this);
  const int streamed =
      static_cast<int>(std::count(placement.begin(), placement.end(), Tier::kNvme));
  const int resident = static_cast<int>(placement.size()) - streamed;
  std::string where =
      offload_needed
          ? fmt::format("{} extents resident ({}), {} streamed from disk ({} per step) through {} "
                        "staging buffers of {} (prefetch depth {})",
                        resident, FormatBytes(resident_bytes), streamed,
                        FormatBytes(streamed_bytes_per_step), placement.staging_buffers,
                        FormatBytes(placement.staging_buffer_bytes), placement.prefetch_depth)
          : fmt::format("all {} extents resident ({}); the model fits, so nothing is offloaded",
                        resident, FormatBytes(resident_bytes));
  return fmt::format("plan: {}; KV cache {} in {}; DRAM used {}; predicted {} tok/s ({}-bound)",
                     where, FormatBytes(kv_bytes), TierPlace(kv_tier, BackendKind::kCpu),
                     FormatBytes(total_dram_bytes()), FormatRate(predicted_tokens_per_s),
                     BoundName(bound));
}

}  // namespace zinf
