// The memory-model table: for every configs/*.json, dtype, budget and device, the bytes a plan
// promises are the bytes the backend allocates (CPU: through Model and CpuBackend for real; CUDA:
// the device pool the backend's constructor sizes, which is host arithmetic), and a plan that fits
// its budget is never refused at start-up.
#include <catch2/catch.hpp>
#include <filesystem>

#include "cpu/cpu_backend.h"
#include "engine/error.h"
#include "engine/model.h"
#include "engine/planner/memory_model.h"
#include "engine/planner/planner.h"
#include "tests/support/shipped_config.h"

namespace zinf {
namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

// Model's constructor reads no weight on the CPU (no extent is held by the backend).
class NoWeights final : public WeightSource {
 public:
  void Prefetch(int) override {}
  ExtentView Acquire(int extent) override {
    Fail("extent {} read by the memory-model test", extent);
  }
  void Release(int, CopyFence) override {}
  int prefetch_depth() const override { return 0; }
  WeightIoStats stats() const override { return {}; }
};

std::vector<std::string> ShippedConfigNames() {
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(ZINF_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A small workload, so the CPU check can allocate for real; micro-batches and extra logit rows
// make the activations differ from a whole-step count.
Workload SmallWorkload(int batch, int micro_batch_tokens, DType kv_dtype) {
  Workload workload;
  workload.batch_size = batch;
  workload.max_context = 32;
  workload.step_tokens = 24;
  workload.micro_batch_tokens = micro_batch_tokens;
  workload.logit_rows = micro_batch_tokens > 0 ? 24 : 0;
  workload.kv_dtype = kv_dtype;
  return workload;
}

void CheckCpuPlan(const Checkpoint& checkpoint, const Plan& plan, const Workload& workload) {
  cpu::CpuBackend backend(1);
  NoWeights weights;
  const Model model(checkpoint, backend, weights, workload.limits(), plan.placement);
  CHECK(backend.allocated_bytes() == plan.kv_bytes + plan.activation_bytes);
  CHECK(plan.staging_bytes == plan.placement.staging_bytes());
  CHECK(plan.total_dram_bytes() ==
        plan.resident_bytes + plan.staging_bytes + plan.kv_bytes + plan.activation_bytes);
}

void CheckCudaPlan(const Checkpoint& checkpoint, const Plan& plan, const PlannerInputs& inputs) {
  // What cuda::CudaBackend's constructor sizes its pool by, and refuses when over --gpu-mem.
  const CudaMemory pool = CudaMemoryFor(checkpoint, inputs.workload.limits(), plan.placement,
                                        inputs.workload.gpu_compute, inputs.workload.kv_offload);
  CHECK(plan.device_bytes == pool.total());
  CHECK(plan.device_bytes <= inputs.gpu_mem_bytes);  // never refused at start-up
  CHECK(plan.resident_bytes == pool.resident_weight_bytes);
  CHECK(plan.device_slot_bytes == pool.slot_bytes * pool.slots);
  CHECK(plan.device_kv_bytes() == pool.kv_bytes);
  CHECK(plan.activation_bytes == pool.activation_bytes);
  CHECK(plan.scratch_bytes == pool.scratch_bytes);
  CHECK(plan.device_bytes == plan.resident_bytes + plan.device_slot_bytes + plan.device_kv_bytes() +
                                 plan.activation_bytes + plan.scratch_bytes);
  // The offloaded KV cache is the CPU backend's, in DRAM.
  if (plan.kv_tier == Tier::kDram) {
    CHECK(plan.kv_bytes ==
          CpuKvCacheBytes(KvShapeFor(checkpoint.config, inputs.workload.limits())));
  }
  CHECK(plan.staging_bytes == plan.placement.staging_bytes());
  CHECK(plan.total_dram_bytes() <= inputs.cpu_mem_bytes);
}

}  // namespace

// [no_threads]: planner arithmetic and one-thread allocations, nothing for TSan to check (its pass
// leaves the test out: ~9 of its 12 minutes on a 2-core Zen 1).
TEST_CASE("memory model: every shipped config's plan promises the bytes its backend allocates",
          "[no_threads]") {
  const std::vector<std::string> names = ShippedConfigNames();
  REQUIRE(names.size() >= 10);
  int cpu_plans = 0, cuda_plans = 0;
  for (const std::string& name : names) {
    for (DType dtype : {DType::kF16, DType::kI8, DType::kQ4}) {
      const Checkpoint checkpoint = testing::ShippedConfigCheckpoint(name, dtype);
      const uint64_t weights = checkpoint.total_bytes();
      for (const auto& [batch, micro, kv_dtype] :
           {std::tuple{1, 0, DType::kF32}, std::tuple{4, 8, DType::kI8},
            std::tuple{3, 0, DType::kI8}, std::tuple{2, 0, DType::kF16}}) {
        const Workload workload = SmallWorkload(batch, micro, kv_dtype);
        for (double share :
             {2.0, 0.6, 0.2, 0.05}) {  // of the weights: all fit, down to mostly streamed
          INFO(name << " " << DTypeName(dtype) << " batch " << batch << " micro " << micro << " KV "
                    << DTypeName(kv_dtype) << " budget " << share << " x weights");
          PlannerInputs inputs;
          inputs.checkpoint = &checkpoint;
          inputs.workload = workload;
          inputs.cpu_mem_bytes = static_cast<uint64_t>(share * weights) + (1ull << 30);
          try {
            CheckCpuPlan(checkpoint, MakePlan(inputs), workload);
            ++cpu_plans;
          } catch (const Error&) {  // too small a budget: refused by the planner, not at start-up
          }
          if (kv_dtype == DType::kF16) continue;  // a CPU cache format (PlanSession refuses it)
          inputs.backend = BackendKind::kCuda;
          inputs.gpu_mem_bytes = static_cast<uint64_t>(share * weights) + (1ull << 30);
          inputs.cpu_mem_bytes = 2 * weights + 4 * kGiB;
          for (bool offload : {false, true}) {
            for (GpuCompute compute : {GpuCompute::kBf16, GpuCompute::kF32}) {
              inputs.workload.kv_offload = offload;
              inputs.workload.gpu_compute = compute;
              try {
                CheckCudaPlan(checkpoint, MakePlan(inputs), inputs);
                ++cuda_plans;
              } catch (const Error&) {
              }
            }
          }
        }
      }
    }
  }
  // Most rows plan: the table covers resident, mixed and streamed placements on both devices.
  CHECK(cpu_plans > static_cast<int>(names.size()) * 3 * 3 * 3);
  CHECK(cuda_plans > static_cast<int>(names.size()) * 3 * 3 * 3 * 4 / 2);
}

}  // namespace zinf
