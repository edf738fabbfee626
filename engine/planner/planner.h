// The placement planner: a pure function from a checkpoint's extent sizes, memory budgets, the
// workload and measured bandwidths to where every extent lives, how it is staged, and the
// throughput that placement predicts. `zinf plan` prints it; generate and bench run it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/model.h"
#include "engine/planner/memory_model.h"
#include "engine/planner/placement.h"
#include "engine/planner/token_rates.h"

namespace zinf {

// What a decode step's time is bounded by. CPU plans: disk, memory, compute, cpu-attention or
// checksums (verifying the streamed extents, on CPUs slow at it); CUDA plans: disk,
// pcie, hbm, compute, cpu-attention (reading an offloaded KV cache from DRAM), cpu-experts
// (the CPU computing the experts the device does not hold), checksums or the kernels' costs.
enum class Bound : uint8_t {
  kDisk,
  kMemory,
  kCompute,
  kPcie,
  kHbm,
  kCpuAttention,
  kCpuExperts,
  kLaunch,        // CUDA: the kernels' fixed costs (small models, small batches)
  kGpuAttention,  // CUDA: the attention walks over the device's KV cache
  kDequant,       // CUDA: int8/int4 matrices dequantised to bf16 before their GEMMs
  kHostLogits,    // CUDA: the logits' way to the host and the sampler's picks there
  kChecksum,      // the host's verifier thread checking what is read from disk
};
const char* BoundName(Bound bound);

// A dense layer's launches in a CUDA decode step under bf16 compute (seven projections, each an
// input cast and a GEMM, and about one element-wise kernel per projection), as calibrate times them.
inline constexpr int kLaunchesPerLayer = 21;

// Measured by `zinf calibrate` (or assumed, which the plan says).
struct Bandwidths {
  double disk_read_gbps = 2.0;  // O_DIRECT sequential read of the weights file's device
  // Verifying a streamed extent's checksum (XXH3-64 from DRAM, one thread), which the step waits
  // for before the extent's products; a thread of its own does it as the extent's chunks land.
  double checksum_gbps = 10.0;
  double dram_read_gbps = 20.0;   // all threads streaming from DRAM
  double h2d_gbps = 25.0;         // pinned host → device copies (CUDA; PCIe 4.0 x16 ≈ 25)
  double compute_gflops = 100.0;  // dense matmul rate of the backend, float weights
  // The same with int8 and int4 weights, whose integer kernels run at other rates (0: as floats).
  double int8_gflops = 0;
  double int4_gflops = 0;
  // The same by the tokens a product multiplies at once, per weight format (zinf calibrate
  // measures them; bf16 weights take f16's): where a format's table is empty, its single rate
  // above stands in at every size. int4's rate moves with its group size (each group's sums are
  // scaled apart: on an Emerald Rapids guest groups of 32 ran at 0.66x those of 64, of 128 at
  // 1.03-1.25x), so it has a table per size; int4_by_tokens is 64's and stands in for a size
  // whose table is empty (a cache from before, a size calibrate does not measure).
  TokenRates f32_by_tokens, f16_by_tokens, int8_by_tokens, int4_by_tokens;
  TokenRates int4_g32_by_tokens, int4_g128_by_tokens;
  // The CPU backend's attention arithmetic in decode steps, over a KV cache in DRAM (0: a
  // quarter of compute_gflops, near what calibrate measures on AVX-512 machines).
  double cpu_attention_gflops = 0;
  double device_gbps = 3000.0;   // device-memory reads (CUDA; H100 HBM3 ≈ 3,350 peak)
  double device_tflops = 400.0;  // device bf16 matmul rate (CUDA; H100 ≈ 990 peak dense)
  // What a CUDA decode step's kernels cost beyond bytes and arithmetic, which the one stream runs
  // one after another (zinf calibrate times the backend's own kernels; the defaults are read off
  // an H100's profile, bench/results/gpu-profile-2026-11-26-h100.txt):
  double gpu_layer_launch_seconds = 140e-6;        // kLaunchesPerLayer launches, sizes aside
  double gpu_attention_lone_key_seconds = 0.7e-6;  // attention per key, a few walks at once
  double gpu_attention_key_seconds = 0.7e-6;       // per key, a full wave of walks
  double gpu_attention_wave_blocks = 1024;         // (row, query head) walks in one wave
  double gpu_dequant_i8_seconds = 6e-12;           // per weight, int8 → bf16 (bf16 compute)
  double gpu_dequant_q4_seconds = 6e-12;           // per weight, int4 → bf16
  // Each step the logits go to the host and the sampler picks each row's token there.
  double gpu_logits_d2h_gbps = 4.0;  // device → pinned staging → the sampler's buffer
  double host_sample_seconds_per_logit = 1e-9;  // a greedy pick, per logit
  bool measured = false;
  bool gpu_measured = false;  // h2d, device_gbps and device_tflops came from a GPU's calibration
  int cpu_threads = 0;        // the threads the CPU's rates were measured with (0: not known)

  // The CPU's product rate with `weights` (int4: in groups of `group_size`) when `tokens` rows
  // are multiplied at once.
  double GflopsFor(DType weights, double tokens, int group_size = 64) const;
  // The table for `weights`' format (f32, f16 or bf16, int8, int4 in groups of `group_size`).
  const TokenRates& ByTokens(DType weights, int group_size = 64) const;
  double CpuAttentionGflops() const {
    return cpu_attention_gflops > 0 ? cpu_attention_gflops : compute_gflops / 4;
  }
};

// CUDA, mixture of experts: where the experts the device cannot hold are computed (--moe-experts).
enum class MoeExperts : uint8_t {
  kAuto,  // whichever of the two the planner predicts faster
  kGpu,   // copied over PCIe to the device each step they are routed to
  kCpu,   // by the CPU from DRAM (KTransformers' split): only the routed rows cross PCIe
};
const char* MoeExpertsName(MoeExperts where);

// One line on the CUDA step's costs beyond bytes and arithmetic in `rates` (plan and calibrate
// print it).
std::string GpuKernelCosts(const Bandwidths& rates);

struct Workload {
  int batch_size = 8;            // sequences decoded together
  int max_context = 2048;        // positions per sequence (KV cache)
  int mean_context = 0;          // positions a decode step's rows attend over; 0: max_context
  int step_tokens = 512;         // most tokens in one forward step (activation size)
  DType kv_dtype = DType::kF32;  // f32, f16 (CPU), or int8 (1 byte per value + a scale per head)
  // CUDA: the KV cache lives in DRAM (in the CPU backend's layout) and attention runs on the CPU
  // over it, so device memory holds weights instead and the batch can grow past it.
  bool kv_offload = false;
  int micro_batch_tokens = 0;  // rows of a micro-batch; 0: the whole step is one
  int logit_rows = 0;          // logit rows per step beyond one per sequence (perplexity)
  GpuCompute gpu_compute = GpuCompute::kBf16;  // CUDA: what f32 weights are multiplied in
  MoeExperts moe_experts = MoeExperts::kAuto;  // CUDA, mixture of experts
  // Cores beyond the CPU backend's threads. A streamed extent's checksum is verified on a thread
  // of its own, which costs the step's work nothing with a core to itself; sharing the cores with
  // the products it took about its whole time from them (Llama-2-13B f16, batch 64, 2 threads on
  // 2 cores: 0.2 s of a step's 1.3 s of hashing saved), so it counts whole there.
  int spare_cores = 0;

  // The limits Model runs this workload under: the memory model sizes a plan by them.
  ModelLimits limits() const;
  // The positions a decode step's rows attend over: mean_context, else max_context.
  int attended_context() const { return mean_context > 0 ? mean_context : max_context; }
  // The share of a cache sized for max_context that a decode step reads.
  double attended_share() const {
    const int attended = attended_context();
    return attended > 0 ? static_cast<double>(attended) / std::max(max_context, attended) : 0.0;
  }
};

struct PlannerInputs {
  const Checkpoint* checkpoint = nullptr;
  BackendKind backend = BackendKind::kCpu;
  uint64_t gpu_mem_bytes = 0;  // budget for the device (CUDA)
  uint64_t cpu_mem_bytes =
      0;  // budget for DRAM: resident extents + staging + KV cache + activations
  Workload workload;
  Bandwidths bandwidths;
  // The ring depths the search tries; --prefetch-depth fixes both, so the memory a shallower ring
  // leaves is spent on resident extents (and a deeper one is paid for by them).
  int max_prefetch_depth = 2;
  int min_prefetch_depth = 0;
  // A mixture-of-experts model's measured expert use (`--routing-profile`); null: a uniform router.
  const RoutingProfile* routing = nullptr;
};

struct Plan {
  Placement placement;  // per extent tier, prefetch depth, staging and device slots
  Tier kv_tier = Tier::kDevice;
  // DRAM (CPU backend: the device) the plan uses, by purpose.
  uint64_t resident_bytes = 0;
  uint64_t staging_bytes = 0;
  uint64_t kv_bytes = 0;
  uint64_t activation_bytes = 0;
  uint64_t streamed_bytes_per_step = 0;
  bool offload_needed = false;
  // CUDA plans: resident_bytes are in device memory; these are the rest.
  uint64_t pinned_bytes = 0;       // DRAM-tier extents, page-locked, copied every step
  uint64_t device_slot_bytes = 0;  // the ring of device weight slots the copies land in
  uint64_t scratch_bytes = 0;      // GEMM casts, dequantised matrices, cuBLAS workspace, tables
  uint64_t device_bytes = 0;       // the device pool: CudaMemoryFor(...).total()
  double h2d_seconds_per_step = 0;
  // The CPU's attention over a KV cache in DRAM: the CPU backend's, or CUDA's --kv-offload cpu.
  double cpu_attention_seconds_per_step = 0;
  // CUDA: the kernels' fixed costs, attention over the device's cache, and dequantisation.
  double launch_seconds_per_step = 0;
  double gpu_attention_seconds_per_step = 0;
  double dequant_seconds_per_step = 0;
  double logits_seconds_per_step = 0;  // CUDA: logits to the host and the sampler's picks
  // CUDA, placement.host_computes_experts: the CPU reading and multiplying the routed experts
  // the device does not hold, and the DRAM its buffers for them take.
  double cpu_experts_seconds_per_step = 0;
  uint64_t host_expert_activation_bytes = 0;
  // Decode-step prediction, CPU: the step takes as long as the slower of reading the streamed
  // extents and the layers' work: the products (reading every weight from memory or their
  // arithmetic, whichever is slower), then attention, and verifying the streamed extents'
  // checksums unless a spare core does that (the work is never less than the checks' own time);
  // tokens/s = batch / step.
  double io_seconds_per_step = 0;
  double checksum_seconds_per_step = 0;  // CUDA too, where it binds only when slower than the disk
  double memory_seconds_per_step = 0;
  double compute_seconds_per_step = 0;
  double predicted_tokens_per_s = 0;
  Bound bound = Bound::kDisk;

  bool on_cuda() const { return placement.backend == BackendKind::kCuda; }
  uint64_t total_dram_bytes() const {
    return on_cuda() ? pinned_bytes + staging_bytes + (kv_tier == Tier::kDram ? kv_bytes : 0) +
                           host_expert_activation_bytes
                     : resident_bytes + staging_bytes + kv_bytes + activation_bytes;
  }
  // CUDA plans: the KV cache's bytes in device memory (0 when it is offloaded to DRAM).
  uint64_t device_kv_bytes() const { return kv_tier == Tier::kDevice ? kv_bytes : 0; }
  // One line for logs and bench output.
  std::string Summary() const;
};

// Sets a CUDA placement's DRAM staging: device-resident extents pass through it once, on their
// way to the GPU, and NVMe ones every step, so its buffers are as large as the largest of either;
// max(depth, 1) + 1 of them, plus kCudaCopyBuffers when any extent is on NVMe. None when neither
// kind exists. Also its device slots: depth + 1, at least 2.
void SetCudaStaging(const std::vector<ExtentInfo>& extents, Placement& placement);
// The same ring from the largest extents on NVMe and on the device alone (0: none there).
struct CudaStaging {
  int buffers = 0;
  int copy_buffers = 0;
  uint64_t buffer_bytes = 0;
  uint64_t bytes() const { return buffers * buffer_bytes; }
};
CudaStaging CudaStagingShape(uint64_t largest_nvme, uint64_t largest_on_device, int depth);

// Throws zinf::Error with the numbers when even full streaming does not fit the budget.
Plan MakePlan(const PlannerInputs& inputs);
// The CUDA backend's plan (MakePlan dispatches here): engine/planner/cuda_planner.cpp.
Plan MakeCudaPlan(const PlannerInputs& inputs);

// The memory use and prediction of a placement chosen elsewhere (--weights resident|stream), so
// runs that override the planner still report how close they came to their bound.
Plan EvaluatePlacement(const PlannerInputs& inputs, std::vector<Tier> placement,
                       int prefetch_depth);
// The same for a CUDA run (engine/planner/cuda_planner.cpp).
Plan EvaluateCudaPlacement(const PlannerInputs& inputs, std::vector<Tier> placement,
                           int prefetch_depth);
// Every extent on `tier` (--weights resident|stream): EvaluatePlacement's plan; on the CPU it
// throws zinf::Error with the numbers when that plan's DRAM use exceeds the budget (a run that
// counts on more memory than there is gets killed by the kernel part-way through).
Plan PlaceEveryExtent(const PlannerInputs& inputs, Tier tier, int prefetch_depth);

struct BatchChoice {
  int batch_size = 1;
  Plan plan;
  std::string why;  // one line: the candidates' predictions and the reason for the pick
};

// --batch-size auto: the batch (powers of two up to max_batch) whose plan predicts the most decode
// tokens/s under the budget — larger batches serve more tokens per byte read, until the KV cache
// crowds resident weights out or the arithmetic becomes the bound. Of the batches within 3% of the
// best, a GPU plan takes the smallest (device memory left to weights), a CPU plan the largest
// (measured speed keeps rising where the prediction is flat). Throws zinf::Error when not even
// batch 1 fits. `plan_for` plans one candidate (MakePlan; a forced placement's planner when
// --weights fixes it) and throws when it does not fit.
BatchChoice ChooseBatchSize(const PlannerInputs& inputs, int max_batch,
                            const std::function<Plan(const PlannerInputs&)>& plan_for = MakePlan);

// The share of a sparse layer's experts a step of `tokens` tokens routes to, for a uniform
// router: 1 − (1 − k/E)^tokens, the expected distinct experts E·(1 − (1 − k/E)^tokens) over E.
// 1 for a dense model.
double RoutedShare(const ModelConfig& config, int tokens);

// KV-cache and activation bytes of a workload on the CPU backend (the memory model's).
uint64_t KvCacheBytes(const ModelConfig& config, const Workload& workload);
uint64_t ActivationBytes(const ModelConfig& config, const Workload& workload);

}  // namespace zinf
