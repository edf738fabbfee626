// MakeCudaPlan: three tiers. Device memory holds the KV cache, the activations and a ring of
// weight slots first, then as many extents as fit resident; the other extents stream every step
// over PCIe from page-locked DRAM, or from NVMe through pinned staging when DRAM is full too. A
// decode step takes as long as the slowest of the disk, the PCIe link and the compute stream
// (device-memory reads or the arithmetic, plus the CPU's attention when the KV cache is
// offloaded), since copies into the slots overlap compute on the previous layer. A mixture of
// experts' experts the device cannot hold are either copied like the rest or, with
// --moe-experts cpu (or auto, when it predicts faster), computed by the CPU from DRAM.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>

#include "engine/error.h"
#include "engine/planner/planner.h"
#include "engine/planner/planner_detail.h"

namespace zinf {

namespace {

// The device pool's placement-independent part (KV cache, activations, scratch), which the
// extents kept on the device and the slot ring share the rest of the budget with.
CudaMemory FixedDeviceMemory(const PlannerInputs& inputs) {
  Placement all_on_device;
  all_on_device.backend = BackendKind::kCuda;
  all_on_device.tiers.assign(inputs.checkpoint->extents.size(), Tier::kDevice);
  return CudaMemoryFor(*inputs.checkpoint, inputs.workload.limits(), all_on_device,
                       inputs.workload.gpu_compute, inputs.workload.kv_offload);
}

// Attention over the device's KV cache: one walk per (row, query head) over its keys, the walks
// proceeding a wave at a time; full waves at the full-wave rate, a partial one between the rate
// of walks that have the multiprocessors to themselves and the full wave's.
double DeviceAttentionSeconds(const ModelConfig& config, int batch, int context,
                              const Bandwidths& bw) {
  const double wave = std::max(bw.gpu_attention_wave_blocks, 1.0);
  const double walks = static_cast<double>(batch) * config.num_heads;
  const double full_waves = std::floor(walks / wave);
  const double rest = walks / wave - full_waves;
  const double lone = bw.gpu_attention_lone_key_seconds, full = bw.gpu_attention_key_seconds;
  const double per_key = full_waves * full + (rest > 0 ? lone + rest * (full - lone) : 0.0);
  return static_cast<double>(config.num_layers) * context * per_key;
}

void PredictCuda(const PlannerInputs& inputs, Plan& plan) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const Bandwidths& bw = inputs.bandwidths;
  const Workload& workload = inputs.workload;
  const int batch = std::max(workload.batch_size, 1);
  plan.io_seconds_per_step = plan.streamed_bytes_per_step / (bw.disk_read_gbps * 1e9);
  // Each extent read from disk is hashed on the host's verifier thread as its chunks land, beside
  // the reads and the device's work: it binds only where hashing is slower than the disk.
  plan.checksum_seconds_per_step = plan.streamed_bytes_per_step / (bw.checksum_gbps * 1e9);
  // Every extent not held on the device is copied each step it is used: experts at their
  // expected routed share; everything the step uses is read from device memory once. Experts the
  // CPU computes stay where they are, and the CPU's time for them adds to the layer's.
  const planner_detail::HostExperts host =
      plan.placement.host_computes_experts
          ? planner_detail::HostExpertWork(checkpoint, inputs.routing, plan.placement, batch, bw)
          : planner_detail::HostExperts{};
  const double used = planner_detail::StepBytesUsed(checkpoint, inputs.routing, batch);
  const double moved = used - host.step_bytes -
                       planner_detail::StepBytesOn(checkpoint, inputs.routing, plan.placement.tiers,
                                                   Tier::kDevice, batch);
  plan.h2d_seconds_per_step = moved / (bw.h2d_gbps * 1e9);
  plan.cpu_experts_seconds_per_step = host.seconds;
  // bf16 compute dequantises each int8/int4 matrix whole into bf16 before its GEMM, which then
  // reads 2 bytes a weight; f32 compute multiplies the stored bytes in the CPU's arithmetic.
  const double weights = planner_detail::ParameterCount(checkpoint);
  const planner_detail::DequantWork dequant =
      workload.gpu_compute == GpuCompute::kF32
          ? planner_detail::DequantWork{}
          : planner_detail::GpuDequantWork(checkpoint, inputs.routing, plan.placement, batch, bw);
  plan.dequant_seconds_per_step = dequant.seconds;
  // The device's cache is read by the attention walks, timed on their own below.
  // The GEMMs read the bf16 copies of quantized matrices; the dequantisation's time covers reading
  // their stored bytes.
  const double device_read_bytes =
      used - host.step_bytes - dequant.stored_bytes + 2.0 * dequant.elements;
  plan.memory_seconds_per_step = device_read_bytes / (bw.device_gbps * 1e9);
  plan.compute_seconds_per_step = 2.0 * weights * batch / (bw.device_tflops * 1e12);
  // Each layer's launches, one layer's worth more for the embedding, the final norm and the head,
  // and a dequantising launch per quantized matrix (calibrate times a layer as kLaunchesPerLayer).
  const double launch_seconds = bw.gpu_layer_launch_seconds / kLaunchesPerLayer;
  plan.launch_seconds_per_step = (checkpoint.config.num_layers + 1) * bw.gpu_layer_launch_seconds +
                                 dequant.matrices * launch_seconds;
  // Every row's logits cross to the host, where the sampler picks its token before the next step
  // can be built.
  plan.logits_seconds_per_step =
      static_cast<double>(batch) * checkpoint.config.vocab_size *
      (sizeof(float) / (bw.gpu_logits_d2h_gbps * 1e9) + bw.host_sample_seconds_per_logit);
  // The walks, or reading the cache's attended share, whichever is slower.
  const int attended = workload.attended_context();
  const double attended_share = workload.attended_share();
  plan.gpu_attention_seconds_per_step =
      plan.kv_tier == Tier::kDevice
          ? std::max(attended_share * static_cast<double>(plan.kv_bytes) / (bw.device_gbps * 1e9),
                     DeviceAttentionSeconds(checkpoint.config, batch, attended, bw))
          : 0.0;
  // An offloaded KV cache is attended by the CPU, as the CPU backend attends. That runs in the
  // compute stream's order, so it adds to the GPU's own time, while the copy stream and the disk
  // go on streaming the next layers.
  plan.cpu_attention_seconds_per_step =
      plan.kv_tier == Tier::kDram
          ? planner_detail::CpuAttentionSeconds(checkpoint.config, workload, plan.kv_bytes, bw)
          : 0.0;
  // The compute stream runs its kernels one after another: the GEMMs (as long as the slower of
  // their reads and their arithmetic), the fixed costs, attention, dequantisation and the CPU's
  // work all add up; the largest names the stream's bound.
  const double gemm_seconds = std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step);
  const std::pair<double, Bound> stream_parts[] = {
      {gemm_seconds, plan.memory_seconds_per_step >= plan.compute_seconds_per_step
                         ? Bound::kHbm
                         : Bound::kCompute},
      {plan.launch_seconds_per_step, Bound::kLaunch},
      {plan.gpu_attention_seconds_per_step, Bound::kGpuAttention},
      {plan.dequant_seconds_per_step, Bound::kDequant},
      {plan.logits_seconds_per_step, Bound::kHostLogits},
      {plan.cpu_attention_seconds_per_step, Bound::kCpuAttention},
      {plan.cpu_experts_seconds_per_step, Bound::kCpuExperts},
  };
  double stream_seconds = 0;
  for (const auto& part : stream_parts) stream_seconds += part.first;
  const Bound stream_bound =
      std::max_element(std::begin(stream_parts), std::end(stream_parts),
                       [](const auto& a, const auto& b) { return a.first < b.first; })
          ->second;
  const double parts[] = {plan.io_seconds_per_step, plan.h2d_seconds_per_step, stream_seconds,
                          plan.checksum_seconds_per_step};
  const Bound bounds[] = {Bound::kDisk, Bound::kPcie, stream_bound, Bound::kChecksum};
  const size_t slowest = std::max_element(std::begin(parts), std::end(parts)) - std::begin(parts);
  plan.bound = bounds[slowest];
  const double step = parts[slowest];
  plan.predicted_tokens_per_s = step > 0 ? batch / step : 0;
}

// A CUDA plan without a placement yet: the KV cache where the workload puts it, activations and
// scratch as the device pool holds them; experts the device does not hold computed by the CPU
// or not.
Plan BaseCudaPlan(const PlannerInputs& inputs, bool host_computes_experts = false) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  Plan plan;
  plan.placement.backend = BackendKind::kCuda;
  plan.placement.host_computes_experts = host_computes_experts;
  if (host_computes_experts) {
    plan.host_expert_activation_bytes =
        HostExpertActivationBytes(checkpoint.config, inputs.workload.limits());
  }
  const CudaMemory fixed = FixedDeviceMemory(inputs);
  // Offloaded, the KV cache is the CPU backend's (its layout and dtype) and comes out of DRAM.
  const bool kv_on_host = inputs.workload.kv_offload;
  plan.kv_tier = kv_on_host ? Tier::kDram : Tier::kDevice;
  plan.kv_bytes = kv_on_host ? KvCacheBytes(checkpoint.config, inputs.workload) : fixed.kv_bytes;
  plan.activation_bytes = fixed.activation_bytes;
  plan.scratch_bytes = fixed.scratch_bytes;
  return plan;
}

// The plan of one placement: its byte counts (the device pool CudaMemoryFor sizes), slot ring,
// staging and prediction.
Plan Candidate(const PlannerInputs& inputs, const Plan& base, std::vector<Tier> tiers, int depth) {
  const std::vector<ExtentInfo>& extents = inputs.checkpoint->extents;
  Plan candidate = base;
  candidate.placement.tiers = std::move(tiers);
  candidate.placement.prefetch_depth = depth;
  SetCudaStaging(extents, candidate.placement);
  candidate.staging_bytes = candidate.placement.staging_bytes();
  for (size_t i = 0; i < extents.size(); ++i) {
    const uint64_t bytes = extents[i].padded_bytes;
    if (candidate.placement[i] == Tier::kDevice) candidate.resident_bytes += bytes;
    if (candidate.placement[i] == Tier::kDram) candidate.pinned_bytes += bytes;
  }
  // Experts at their expected routed share.
  candidate.streamed_bytes_per_step = static_cast<uint64_t>(
      planner_detail::StepBytesOn(*inputs.checkpoint, inputs.routing, candidate.placement.tiers,
                                  Tier::kNvme, std::max(inputs.workload.batch_size, 1)));
  candidate.offload_needed = candidate.resident_bytes < inputs.checkpoint->total_bytes();
  const CudaMemory memory =
      CudaMemoryFor(*inputs.checkpoint, inputs.workload.limits(), candidate.placement,
                    inputs.workload.gpu_compute, inputs.workload.kv_offload);
  candidate.device_slot_bytes = memory.slot_bytes * memory.slots;
  candidate.device_bytes = memory.total();
  PredictCuda(inputs, candidate);
  return candidate;
}

// One way of computing experts' search (MakeCudaPlan): every depth and pair of caps, keeping in
// `best` the fitting plan that predicts the most tokens/s.
void SearchPlacements(const PlannerInputs& inputs, const Plan& base,
                      const std::vector<size_t>& order, const std::vector<uint64_t>& caps,
                      uint64_t device_room, uint64_t host_room,
                      const std::function<bool(const Plan&)>& fits, std::optional<Plan>& best) {
  const std::vector<ExtentInfo>& extents = inputs.checkpoint->extents;
  host_room -= std::min(host_room, base.host_expert_activation_bytes);
  for (int depth = std::max(inputs.max_prefetch_depth, 1);
       depth >= std::max(inputs.min_prefetch_depth, 1); --depth) {
    const int slots = depth + 1;
    for (uint64_t device_cap : caps) {
      std::vector<Tier> on_device(extents.size(), Tier::kDram);  // kDram: "not on the device"
      const std::optional<uint64_t> resident =
          planner_detail::KeepGreedily(extents, order, device_cap, planner_detail::RingOf(slots),
                                       device_room, Tier::kDevice, Tier::kDram, on_device);
      if (!resident) continue;
      for (uint64_t host_cap : caps) {
        std::vector<Tier> placement = on_device;
        for (Tier& tier : placement) {
          if (tier != Tier::kDevice) tier = Tier::kNvme;  // until DRAM is shown to hold it
        }
        const uint64_t largest_on_device =
            planner_detail::LargestOn(extents, on_device, Tier::kDevice);
        const std::optional<uint64_t> pinned = planner_detail::KeepGreedily(
            extents, order, host_cap,
            [&](uint64_t largest_nvme) {
              return CudaStagingShape(largest_nvme, largest_on_device, depth).bytes();
            },
            host_room, Tier::kDram, Tier::kNvme, placement);
        if (!pinned) continue;
        Plan candidate = Candidate(inputs, base, std::move(placement), depth);
        if (!fits(candidate)) continue;
        if (!best || candidate.predicted_tokens_per_s > best->predicted_tokens_per_s) {
          best = std::move(candidate);
        }
      }
    }
  }
}

}  // namespace

CudaStaging CudaStagingShape(uint64_t largest_nvme, uint64_t largest_on_device, int depth) {
  CudaStaging staging;
  staging.buffer_bytes = std::max(largest_nvme, largest_on_device);
  if (staging.buffer_bytes > 0) {
    staging.copy_buffers = largest_nvme > 0 ? kCudaCopyBuffers : 0;
    staging.buffers = std::max(depth, 1) + 1 + staging.copy_buffers;
  }
  return staging;
}

void SetCudaStaging(const std::vector<ExtentInfo>& extents, Placement& placement) {
  const int depth = placement.prefetch_depth;
  const CudaStaging staging =
      CudaStagingShape(planner_detail::LargestOn(extents, placement.tiers, Tier::kNvme),
                       planner_detail::LargestOn(extents, placement.tiers, Tier::kDevice), depth);
  placement.staging_buffer_bytes = staging.buffer_bytes;
  placement.copy_buffers = staging.copy_buffers;
  placement.staging_buffers = staging.buffers;
  bool any_moved = false;  // to the device: experts the CPU computes stay in DRAM
  for (size_t e = 0; e < extents.size(); ++e) {
    any_moved |= placement[e] != Tier::kDevice &&
                 !placement.ComputedOnHost(e, extents[e].kind == ExtentKind::kExpert);
  }
  placement.device_slots = any_moved ? std::max(depth + 1, 2) : 0;
}

Plan EvaluateCudaPlacement(const PlannerInputs& inputs, std::vector<Tier> placement,
                           int prefetch_depth) {
  ZINF_CHECK(placement.size() == inputs.checkpoint->extents.size(), "{} placements for {} extents",
             placement.size(), inputs.checkpoint->extents.size());
  const bool host_experts =
      inputs.checkpoint->config.is_moe() && inputs.workload.moe_experts == MoeExperts::kCpu;
  return Candidate(inputs, BaseCudaPlan(inputs, host_experts), std::move(placement),
                   prefetch_depth);
}

Plan MakeCudaPlan(const PlannerInputs& inputs) {
  const Checkpoint& checkpoint = *inputs.checkpoint;
  const std::vector<ExtentInfo>& extents = checkpoint.extents;
  if (inputs.gpu_mem_bytes == 0) Fail("a CUDA plan needs --gpu-mem (device memory to use)");
  const Plan base = BaseCudaPlan(inputs);
  const uint64_t device_fixed = base.device_kv_bytes() + base.activation_bytes + base.scratch_bytes;
  const bool kv_on_host = base.kv_tier == Tier::kDram;
  const uint64_t host_kv = kv_on_host ? base.kv_bytes : 0;
  if (host_kv > inputs.cpu_mem_bytes) {
    Fail("--cpu-mem {} is too small for the offloaded KV cache of {} (batch {} × context {}); "
         "lower --batch-size or --max-context, use --kv-dtype int8, or raise --cpu-mem",
         FormatBytesBeside(inputs.cpu_mem_bytes, host_kv),
         FormatBytesBeside(host_kv, inputs.cpu_mem_bytes), inputs.workload.batch_size,
         inputs.workload.max_context);
  }
  const uint64_t host_room = inputs.cpu_mem_bytes - host_kv;  // for pinned weights and staging
  const auto fits = [&](const Plan& plan) {
    return plan.device_bytes <= inputs.gpu_mem_bytes &&
           plan.total_dram_bytes() <= inputs.cpu_mem_bytes;
  };
  {
    Plan all_on_device =
        Candidate(inputs, base, std::vector<Tier>(extents.size(), Tier::kDevice), 0);
    if (fits(all_on_device))
      return all_on_device;  // everything fits the device: offload is pointless
  }

  // For each depth and each pair of caps: fill the device (after the KV cache, activations,
  // scratch and depth + 1 slots sized to the largest extent still moved), then DRAM (after the
  // NVMe staging ring), then NVMe, each by planner_detail::KeepGreedily, so that two large extents
  // (embeddings and head) can claim a tier together and leave the ring sized to a layer; keep the
  // plan that predicts the most tokens/s among those whose device pool (CudaMemoryFor) fits. A
  // mixture of experts is planned with the experts left off the device copied to it, computed by
  // the CPU, or both ways (--moe-experts auto), the faster kept.
  const std::vector<size_t> order = planner_detail::ResidencyOrder(extents, inputs.routing);
  const std::vector<uint64_t> caps = planner_detail::DistinctSizes(extents, order);
  const uint64_t device_room = inputs.gpu_mem_bytes - std::min(inputs.gpu_mem_bytes, device_fixed);
  std::optional<Plan> best;
  const MoeExperts experts =
      checkpoint.config.is_moe() ? inputs.workload.moe_experts : MoeExperts::kGpu;
  std::vector<bool> expert_modes;  // host_computes_experts, as --moe-experts allows
  if (experts != MoeExperts::kCpu) expert_modes.push_back(false);
  if (experts != MoeExperts::kGpu) expert_modes.push_back(true);
  for (const bool host_experts : expert_modes) {
    SearchPlacements(inputs, BaseCudaPlan(inputs, host_experts), order, caps, device_room,
                     host_room, fits, best);
  }
  if (best) return *best;
  const uint64_t largest = checkpoint.max_extent_padded_bytes();
  Fail("--gpu-mem {} is too small: the device needs at least {} — KV cache {} (batch {} × context "
       "{}{}) + activations {} + scratch {} + two weight slots of {} (the largest extent); lower "
       "--batch-size or --max-context, or raise --gpu-mem (or, with too little --cpu-mem {} for "
       "pinned staging, raise that)",
       FormatBytesBeside(inputs.gpu_mem_bytes, device_fixed + 2 * largest),
       FormatBytesBeside(device_fixed + 2 * largest, inputs.gpu_mem_bytes),
       FormatBytes(base.device_kv_bytes()), inputs.workload.batch_size, inputs.workload.max_context,
       kv_on_host ? ", offloaded" : "", FormatBytes(base.activation_bytes),
       FormatBytes(base.scratch_bytes), FormatBytes(largest), FormatBytes(inputs.cpu_mem_bytes));
}

std::string CudaSummary(const Plan& plan) {
  const auto count = [&](Tier tier) {
    return std::count(plan.placement.begin(), plan.placement.end(), tier);
  };
  const std::string where =
      plan.offload_needed
          ? fmt::format(
                "{} extents in device memory ({}), {} in pinned DRAM ({}), {} streamed "
                "from disk ({} per step); {}",
                count(Tier::kDevice), FormatBytes(plan.resident_bytes), count(Tier::kDram),
                FormatBytes(plan.pinned_bytes), count(Tier::kNvme),
                FormatBytes(plan.streamed_bytes_per_step),
                plan.placement.device_slots == 0
                    ? std::string("no device slots (nothing is copied to the device per step)")
                    : fmt::format("{} device slots of {} (prefetch depth {})",
                                  plan.placement.device_slots,
                                  FormatBytes(plan.device_slot_bytes / plan.placement.device_slots),
                                  plan.placement.prefetch_depth))
          : fmt::format("all {} extents in device memory ({}); the model fits, so nothing is "
                        "offloaded",
                        plan.placement.size(), FormatBytes(plan.resident_bytes));
  const std::string experts =
      plan.placement.host_computes_experts && plan.offload_needed
          ? fmt::format("; experts not in device memory computed by the CPU ({:.3f} s per step)",
                        plan.cpu_experts_seconds_per_step)
          : "";
  return fmt::format("plan: {}{}; KV cache {} {}; device memory used {}, DRAM used {}; "
                     "predicted {} tok/s ({}-bound)",
                     where, experts, FormatBytes(plan.kv_bytes),
                     plan.kv_tier == Tier::kDram ? "in DRAM, attention on the CPU"
                                                 : "on the device",
                     FormatBytes(plan.device_bytes), FormatBytes(plan.total_dram_bytes()),
                     FormatRate(plan.predicted_tokens_per_s), BoundName(plan.bound));
}

}  // namespace zinf
