// MakeCudaPlan: three tiers. Device memory holds the KV cache, the activations and a ring of
// weight slots first, then as many extents as fit resident; the other extents stream every step
// over PCIe from page-locked DRAM, or from NVMe through pinned staging when DRAM is full too. A
// decode step takes as long as the slowest of the disk, the PCIe link and the compute stream
// (device-memory reads or the arithmetic, plus the CPU's attention when the KV cache is
// offloaded), since copies into the slots overlap compute on the previous layer.
#include <algorithm>
#include <optional>

#include "engine/error.h"
#include "engine/planner/planner.h"
#include "engine/planner/planner_detail.h"

namespace zinf {

namespace {

using planner_detail::GiB;

// The CUDA backend computes in bf16 / f16 and keeps its KV cache in bf16 (or int8).
uint64_t DeviceKvBytes(const ModelConfig& config, const Workload& workload) {
  Workload as_stored = workload;
  if (as_stored.kv_dtype == DType::kF32) {
    return KvCacheBytes(config, as_stored) / 2;  // 2-byte values
  }
  return KvCacheBytes(config, as_stored);
}

// The largest extent not held in device memory: the size of every device slot.
uint64_t LargestMoved(const std::vector<ExtentInfo>& extents, const std::vector<Tier>& placement) {
  return std::max(planner_detail::LargestOn(extents, placement, Tier::kDram),
                  planner_detail::LargestOn(extents, placement, Tier::kNvme));
}

void PredictCuda(const PlannerInputs& inputs, Plan& plan) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const Bandwidths& bw = inputs.bandwidths;
  const int batch = std::max(inputs.workload.batch_size, 1);
  plan.io_seconds_per_step = plan.streamed_bytes_per_step / (bw.disk_read_gbps * 1e9);
  const double moved = static_cast<double>(plan.pinned_bytes + plan.streamed_bytes_per_step);
  plan.h2d_seconds_per_step = moved / (bw.h2d_gbps * 1e9);
  const double device_read_bytes =
      static_cast<double>(checkpoint.total_bytes()) + static_cast<double>(plan.device_kv_bytes());
  plan.memory_seconds_per_step = device_read_bytes / (bw.device_gbps * 1e9);
  plan.compute_seconds_per_step =
      2.0 * planner_detail::ParameterCount(checkpoint) * batch / (bw.device_tflops * 1e12);
  // An offloaded KV cache is read whole from DRAM by the CPU's attention every step (upper
  // bound: full contexts). It runs in the compute stream's order, so it adds to the GPU's own
  // time, while the copy stream and the disk go on streaming the next layers.
  plan.cpu_attention_seconds_per_step =
      plan.kv_tier == Tier::kDram ? plan.kv_bytes / (bw.dram_read_gbps * 1e9) : 0.0;
  const double gpu_seconds = std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step);
  const char* stream_bound = plan.cpu_attention_seconds_per_step > gpu_seconds ? "cpu-attention"
                             : plan.memory_seconds_per_step >= plan.compute_seconds_per_step
                                 ? "hbm"
                                 : "compute";
  const double parts[] = {plan.io_seconds_per_step, plan.h2d_seconds_per_step,
                          gpu_seconds + plan.cpu_attention_seconds_per_step};
  const char* names[] = {"disk", "pcie", stream_bound};
  const size_t slowest = std::max_element(std::begin(parts), std::end(parts)) - std::begin(parts);
  plan.bound = names[slowest];
  const double step = parts[slowest];
  plan.predicted_tokens_per_s = step > 0 ? batch / step : 0;
}

// The plan of one placement: its byte counts, slot ring, staging and prediction.
Plan Candidate(const PlannerInputs& inputs, const Plan& base, std::vector<Tier> placement, int depth,
               uint64_t resident, uint64_t pinned) {
  const std::vector<ExtentInfo>& extents = inputs.checkpoint->extents;
  const uint64_t slots = depth + 1;
  Plan candidate = base;
  candidate.placement = std::move(placement);
  candidate.prefetch_depth = depth;
  candidate.resident_bytes = resident;
  candidate.pinned_bytes = pinned;
  candidate.device_slot_bytes = slots * LargestMoved(extents, candidate.placement);
  candidate.device_bytes =
      base.device_kv_bytes() + base.activation_bytes + resident + candidate.device_slot_bytes;
  SetCudaStaging(extents, candidate);
  for (size_t i = 0; i < extents.size(); ++i) {
    if (candidate.placement[i] == Tier::kNvme) {
      candidate.streamed_bytes_per_step += extents[i].padded_bytes;
    }
  }
  PredictCuda(inputs, candidate);
  return candidate;
}

}  // namespace

CudaStaging CudaStagingFor(const std::vector<ExtentInfo>& extents,
                           const std::vector<Tier>& placement, int prefetch_depth) {
  const uint64_t largest_nvme = planner_detail::LargestOn(extents, placement, Tier::kNvme);
  CudaStaging staging;
  staging.buffer_bytes =
      std::max(largest_nvme, planner_detail::LargestOn(extents, placement, Tier::kDevice));
  if (staging.buffer_bytes == 0) return staging;
  staging.copy_buffers = largest_nvme > 0 ? kCudaCopyBuffers : 0;
  staging.buffers = std::max(prefetch_depth, 1) + 1 + staging.copy_buffers;
  return staging;
}

CudaStaging SetCudaStaging(const std::vector<ExtentInfo>& extents, Plan& plan) {
  const CudaStaging staging = CudaStagingFor(extents, plan.placement, plan.prefetch_depth);
  plan.num_staging_buffers = staging.buffers;
  plan.staging_buffer_bytes = staging.buffer_bytes;
  plan.staging_bytes = staging.bytes();
  return staging;
}

Plan MakeCudaPlan(const PlannerInputs& inputs) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const std::vector<ExtentInfo>& extents = checkpoint.extents;
  if (inputs.gpu_mem_bytes == 0) Fail("a CUDA plan needs --gpu-mem (device memory to use)");
  Plan plan;
  plan.on_cuda = true;
  // Offloaded, the KV cache is the CPU backend's (its layout and dtype) and comes out of DRAM.
  const bool kv_on_host = inputs.workload.kv_offload;
  plan.kv_tier = kv_on_host ? Tier::kDram : Tier::kDevice;
  plan.kv_bytes = kv_on_host ? KvCacheBytes(checkpoint.config, inputs.workload)
                             : DeviceKvBytes(checkpoint.config, inputs.workload);
  plan.activation_bytes = ActivationBytes(checkpoint.config, inputs.workload);
  const uint64_t device_fixed = plan.device_kv_bytes() + plan.activation_bytes;
  const uint64_t host_kv = kv_on_host ? plan.kv_bytes : 0;
  if (host_kv > inputs.cpu_mem_bytes) {
    Fail("--cpu-mem {} is too small for the offloaded KV cache of {} (batch {} × context {}); "
         "lower --batch-size or --max-context, use --kv-dtype int8, or raise --cpu-mem",
         GiB(inputs.cpu_mem_bytes), GiB(host_kv), inputs.workload.batch_size,
         inputs.workload.max_context);
  }
  const uint64_t host_room = inputs.cpu_mem_bytes - host_kv;  // for pinned weights and staging
  if (device_fixed + checkpoint.total_bytes() <= inputs.gpu_mem_bytes) {
    plan.placement.assign(extents.size(), Tier::kDevice);
    plan.resident_bytes = checkpoint.total_bytes();
    plan.device_bytes = device_fixed + plan.resident_bytes;
    SetCudaStaging(extents, plan);  // for the one pass that brings the weights to the device
    PredictCuda(inputs, plan);
    return plan;  // everything fits the device: offload is pointless
  }

  // For each depth and each pair of caps: fill the device (after the KV cache, activations and
  // depth + 1 slots sized to the largest extent still moved), then DRAM (after the NVMe staging
  // ring), then NVMe, each by planner_detail::KeepGreedily, so that two large extents (embeddings
  // and head) can claim a tier together and leave the ring sized to a layer; keep the plan that
  // predicts the most tokens/s.
  plan.offload_needed = true;
  const std::vector<size_t> order = planner_detail::ResidencyOrder(extents);
  const std::vector<uint64_t> caps = planner_detail::DistinctSizes(extents, order);
  const uint64_t device_room = inputs.gpu_mem_bytes - std::min(inputs.gpu_mem_bytes, device_fixed);
  std::optional<Plan> best;
  for (int depth = std::max(inputs.max_prefetch_depth, 1); depth >= 1; --depth) {
    const int slots = depth + 1;
    for (uint64_t device_cap : caps) {
      std::vector<Tier> on_device(extents.size(), Tier::kDram);  // kDram: "not on the device"
      const std::optional<uint64_t> resident = planner_detail::KeepGreedily(
          extents, order, device_cap, planner_detail::RingOf(extents, slots, Tier::kDram),
          device_room, Tier::kDevice, Tier::kDram, on_device);
      if (!resident) continue;
      for (uint64_t host_cap : caps) {
        std::vector<Tier> placement = on_device;
        for (Tier& tier : placement) {
          if (tier != Tier::kDevice) tier = Tier::kNvme;  // until DRAM is shown to hold it
        }
        const std::optional<uint64_t> pinned = planner_detail::KeepGreedily(
            extents, order, host_cap,
            [&](const std::vector<Tier>& p) { return CudaStagingFor(extents, p, depth).bytes(); },
            host_room, Tier::kDram, Tier::kNvme, placement);
        if (!pinned) continue;
        Plan candidate = Candidate(inputs, plan, std::move(placement), depth, *resident, *pinned);
        if (!best || candidate.predicted_tokens_per_s > best->predicted_tokens_per_s) {
          best = std::move(candidate);
        }
      }
    }
  }
  if (best) return *best;
  const uint64_t largest = checkpoint.max_extent_padded_bytes();
  Fail("--gpu-mem {} is too small: the device needs at least {} — KV cache {} (batch {} × context "
       "{}{}) + activations {} + two weight slots of {} (the largest extent); lower --batch-size or "
       "--max-context, or raise --gpu-mem (or, with too little --cpu-mem {} for pinned staging, "
       "raise that)",
       GiB(inputs.gpu_mem_bytes), GiB(device_fixed + 2 * largest), GiB(plan.device_kv_bytes()),
       inputs.workload.batch_size, inputs.workload.max_context, kv_on_host ? ", offloaded" : "",
       GiB(plan.activation_bytes), GiB(largest), GiB(inputs.cpu_mem_bytes));
}

std::string CudaSummary(const Plan& plan) {
  const auto count = [&](Tier tier) {
    return std::count(plan.placement.begin(), plan.placement.end(), tier);
  };
  const std::string where =
      plan.offload_needed
          ? fmt::format("{} extents in device memory ({}), {} in pinned DRAM ({}), {} streamed "
                        "from NVMe ({} per step); {} device slots of {} (prefetch depth {})",
                        count(Tier::kDevice), GiB(plan.resident_bytes), count(Tier::kDram),
                        GiB(plan.pinned_bytes), count(Tier::kNvme),
                        GiB(plan.streamed_bytes_per_step), plan.prefetch_depth + 1,
                        GiB(plan.device_slot_bytes / std::max(plan.prefetch_depth + 1, 1)),
                        plan.prefetch_depth)
          : fmt::format("all {} extents in device memory ({}); the model fits, so nothing is "
                        "offloaded",
                        plan.placement.size(), GiB(plan.resident_bytes));
  return fmt::format("plan: {}; KV cache {} {}; device memory used {}, DRAM used {}; "
                     "predicted {:.1f} tok/s ({}-bound)",
                     where, GiB(plan.kv_bytes),
                     plan.kv_tier == Tier::kDram ? "in DRAM, attention on the CPU" : "on the device",
                     GiB(plan.device_bytes), GiB(plan.total_dram_bytes()),
                     plan.predicted_tokens_per_s, plan.bound);
}

}  // namespace zinf
