// MakePlan for the CPU backend: keep what fits in DRAM resident (the embeddings first: they are
// read whole when streamed but only a few rows are used), stream the rest from NVMe through a ring
// of prefetch_depth + 1 staging buffers, and predict the decode rate from the three bounds.
#include "engine/planner/planner.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "engine/error.h"
#include "engine/planner/planner_detail.h"

namespace zinf {

using planner_detail::GiB;
using planner_detail::ResidencyOrder;

namespace {

// The largest extent still streamed: the staging buffer size.
uint64_t LargestStreamed(const std::vector<ExtentInfo>& extents, const std::vector<Tier>& placement) {
  return planner_detail::LargestOn(extents, placement, Tier::kNvme);
}

// Resident extents (Tier::kDevice: in the CPU's memory) by planner_detail::KeepGreedily, the rest
// streamed through `buffers` staging buffers, within `room` (the budget less KV cache and
// activations). nullopt when the extents larger than `cap` and their ring do not fit.
std::optional<std::vector<Tier>> GreedyPlacement(const std::vector<ExtentInfo>& extents,
                                                 const std::vector<size_t>& order, uint64_t cap,
                                                 int buffers, uint64_t room) {
  std::vector<Tier> placement(extents.size(), Tier::kNvme);
  if (!planner_detail::KeepGreedily(extents, order, cap,
                                    planner_detail::RingOf(extents, buffers, Tier::kNvme), room,
                                    Tier::kDevice, Tier::kNvme, placement)) {
    return std::nullopt;
  }
  return placement;
}

void Predict(const PlannerInputs& inputs, Plan& plan) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const Bandwidths& bw = inputs.bandwidths;
  const int batch = std::max(inputs.workload.batch_size, 1);
  plan.io_seconds_per_step = plan.streamed_bytes_per_step / (bw.disk_read_gbps * 1e9);
  // Every weight byte is read from memory once per step, plus each sequence's KV cache.
  const double kv_read_bytes = plan.kv_bytes;  // upper bound: full contexts
  plan.memory_seconds_per_step =
      (checkpoint.total_bytes() + kv_read_bytes) / (bw.dram_read_gbps * 1e9);
  plan.compute_seconds_per_step = planner_detail::CpuMatmulSeconds(checkpoint, batch, bw);
  // With prefetching, reads overlap compute; without it, each extent is read, then computed.
  const double work = std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step);
  const bool overlapped = plan.prefetch_depth > 0 || plan.streamed_bytes_per_step == 0;
  const double step = overlapped ? std::max(plan.io_seconds_per_step, work)
                                 : plan.io_seconds_per_step + work;
  plan.predicted_tokens_per_s = step > 0 ? batch / step : 0;
  const double largest = std::max(plan.io_seconds_per_step, work);
  if (largest == plan.io_seconds_per_step) {
    plan.bound = "disk";
  } else if (largest == plan.memory_seconds_per_step) {
    plan.bound = "memory";
  } else {
    plan.bound = "compute";
  }
}

}  // namespace

const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kDevice: return "device";
    case Tier::kDram: return "dram";
    case Tier::kNvme: return "nvme";
  }
  return "?";
}

uint64_t KvCacheBytes(const ModelConfig& config, const Workload& workload) {
  // Per position and layer: keys and values, kv_dim each; int8 adds an f32 scale per KV head.
  const uint64_t per_position =
      workload.kv_dtype == DType::kI8
          ? 2ull * (config.kv_dim() + sizeof(float) * config.num_kv_heads)
          : 2ull * config.kv_dim() * sizeof(float);
  return per_position * config.num_layers * static_cast<uint64_t>(workload.batch_size) *
         workload.max_context;
}

uint64_t ActivationBytes(const ModelConfig& config, const Workload& workload) {
  // Mirrors Model's buffers: per step-token rows of x, normed, q, k, v, attention, gate, up (and
  // the embedding projection), plus per-sequence rows for the head and its logits.
  const uint64_t per_token = 2ull * config.hidden_size + 2ull * config.q_dim() +
                             2ull * config.kv_dim() + 2ull * config.intermediate_size +
                             (config.has_embed_projection() ? config.embed_dim() : 0);
  const uint64_t per_sequence = 2ull * config.hidden_size + config.embed_dim() + config.vocab_size;
  return sizeof(float) * (per_token * workload.step_tokens + per_sequence * workload.batch_size);
}

Plan MakePlan(const PlannerInputs& inputs) {
  ZINF_CHECK(inputs.checkpoint != nullptr, "planner without a checkpoint");
  if (inputs.backend == BackendKind::kCuda) return MakeCudaPlan(inputs);
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const std::vector<ExtentInfo>& extents = checkpoint.extents;
  Plan plan;
  plan.placement.assign(extents.size(), Tier::kDevice);
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
  const std::vector<size_t> order = ResidencyOrder(extents);
  const std::vector<uint64_t> caps = planner_detail::DistinctSizes(extents, order);
  const uint64_t room = budget - std::min(budget, fixed);  // for resident extents and staging
  std::optional<Plan> best;
  for (int depth = inputs.max_prefetch_depth; depth >= 0; --depth) {
    for (uint64_t cap : caps) {
      const std::optional<std::vector<Tier>> placement =
          GreedyPlacement(extents, order, cap, depth + 1, room);
      if (!placement) continue;
      plan.placement = *placement;
      plan.prefetch_depth = depth;
      plan.num_staging_buffers = depth + 1;
      plan.staging_buffer_bytes = LargestStreamed(extents, plan.placement);
      plan.staging_bytes = plan.num_staging_buffers * plan.staging_buffer_bytes;
      plan.resident_bytes = 0;
      plan.streamed_bytes_per_step = 0;
      for (size_t i = 0; i < extents.size(); ++i) {
        (plan.placement[i] == Tier::kNvme ? plan.streamed_bytes_per_step : plan.resident_bytes) +=
            extents[i].padded_bytes;
      }
      Predict(inputs, plan);
      if (!best || plan.predicted_tokens_per_s > best->predicted_tokens_per_s) best = plan;
    }
  }
  if (best) return *best;
  // Any placement needs staging for its largest streamed extent or holds that extent resident.
  const uint64_t largest = checkpoint.max_extent_padded_bytes();
  Fail("--cpu-mem {} is too small: streaming needs at least {} — KV cache {} (batch {} × "
       "context {}) + activations {} + one staging buffer of {} (the largest extent); lower --batch-size or --max-context, or raise --cpu-mem",
       GiB(budget), GiB(fixed + largest), GiB(plan.kv_bytes), inputs.workload.batch_size,
       inputs.workload.max_context, GiB(plan.activation_bytes), GiB(largest));
}

Plan EvaluatePlacement(const PlannerInputs& inputs, std::vector<Tier> placement,
                       int prefetch_depth) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  ZINF_CHECK(placement.size() == checkpoint.extents.size(), "{} placements for {} extents",
             placement.size(), checkpoint.extents.size());
  Plan plan;
  plan.placement = std::move(placement);
  plan.kv_bytes = KvCacheBytes(checkpoint.config, inputs.workload);
  plan.activation_bytes = ActivationBytes(checkpoint.config, inputs.workload);
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    const uint64_t bytes = checkpoint.extents[i].padded_bytes;
    if (plan.placement[i] == Tier::kNvme) {
      plan.streamed_bytes_per_step += bytes;
    } else {
      plan.resident_bytes += bytes;
    }
  }
  plan.offload_needed = plan.streamed_bytes_per_step > 0;
  if (plan.offload_needed) {
    plan.prefetch_depth = prefetch_depth;
    plan.num_staging_buffers = prefetch_depth + 1;
    plan.staging_buffer_bytes = checkpoint.max_extent_padded_bytes();
    plan.staging_bytes = plan.num_staging_buffers * plan.staging_buffer_bytes;
  }
  Predict(inputs, plan);
  return plan;
}

BatchChoice ChooseBatchSize(const PlannerInputs& inputs, int max_batch) {
  std::vector<std::pair<int, Plan>> candidates;
  std::string tried;
  for (int batch = 1; batch <= std::max(max_batch, 1); batch *= 2) {
    PlannerInputs candidate = inputs;
    candidate.workload.batch_size = batch;
    candidate.workload.step_tokens = std::max(inputs.workload.step_tokens, batch);
    try {
      candidates.emplace_back(batch, MakePlan(candidate));
      tried += fmt::format(" {}:{:.1f}", batch, candidates.back().second.predicted_tokens_per_s);
    } catch (const Error& error) {
      if (candidates.empty()) throw;
      tried += fmt::format(" {}:does-not-fit", batch);
      break;  // larger batches need more memory still
    }
  }
  double best = 0;
  for (const auto& [batch, plan] : candidates) best = std::max(best, plan.predicted_tokens_per_s);
  for (const auto& [batch, plan] : candidates) {
    if (plan.predicted_tokens_per_s >= 0.97 * best) {
      return {batch, plan,
              fmt::format("batch size {} (auto): predicted decode tok/s by batch{}; the smallest "
                          "within 3% of the best, {}-bound",
                          batch, tried, plan.bound)};
    }
  }
  ZINF_CHECK(false, "no batch candidate");
}

std::string Plan::Summary() const {
  if (on_cuda) return CudaSummary(*this);
  const int streamed = static_cast<int>(std::count(placement.begin(), placement.end(), Tier::kNvme));
  const int resident = static_cast<int>(placement.size()) - streamed;
  std::string where =
      offload_needed
          ? fmt::format("{} extents resident ({}), {} streamed from NVMe ({} per step) through {} "
                        "staging buffers of {} (prefetch depth {})",
                        resident, GiB(resident_bytes), streamed, GiB(streamed_bytes_per_step),
                        num_staging_buffers, GiB(staging_buffer_bytes), prefetch_depth)
          : fmt::format("all {} extents resident ({}); the model fits, so nothing is offloaded",
                        resident, GiB(resident_bytes));
  return fmt::format("plan: {}; KV cache {} in {}; DRAM used {}; predicted {:.1f} tok/s ({}-bound)",
                     where, GiB(kv_bytes), TierName(kv_tier), GiB(total_dram_bytes()),
                     predicted_tokens_per_s, bound);
}

}  // namespace zinf
