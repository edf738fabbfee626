// Streamed weights copied from page-locked host memory, where copies really are asynchronous and
// the layer loop's only guard for the host bytes is the copy fence the weight source holds:
// logits stay the CPU's, transfer_stats counts every streamed byte once per step, and a fence
// works when called late, twice, or after the backend is gone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "cuda/cuda_backend.h"
#include "engine/planner/planner.h"
#include "tests/engine/harness.h"

namespace zinf::testing {
namespace {

// Every extent copied to the GPU every step, from DRAM (kDram) or through staging (kNvme).
Placement AllMoved(const Checkpoint& checkpoint, Tier host_tier) {
  Placement placement;
  placement.backend = BackendKind::kCuda;
  placement.tiers.assign(checkpoint.extents.size(), host_tier);
  placement.prefetch_depth = 1;
  SetCudaStaging(checkpoint.extents, placement);
  return placement;
}

std::unique_ptr<Backend> AllStreamed(const Checkpoint& checkpoint, const ModelLimits& limits,
                                     const Placement& placement) {
  cuda::CudaOptions options;
  options.compute = cuda::ComputeType::kF32;
  options.placement = placement;
  return cuda::CreateCudaBackend(checkpoint, limits, options);
}

ModelLimits OnePrompt(const Checkpoint& checkpoint, int tokens) {
  ModelLimits limits;
  limits.max_sequences = 1;
  limits.max_tokens_per_step = tokens;
  limits.max_context = checkpoint.config.max_position_embeddings;
  return limits;
}

TEST_CASE("cuda: streaming from page-locked memory keeps logits and counts every copied byte") {
  const LoadedModel& model = Stories260K();
  const Checkpoint& checkpoint = model.checkpoint;
  const std::vector<TokenId> prompt = {1, 100, 200, 300, 400};
  const std::vector<float> cpu = LastLogits(model, prompt);
  // DRAM tier: fences dropped; NVMe tier: staging buffers reused behind their fences.
  const auto placement = GENERATE(io::WeightPlacement::kResident, io::WeightPlacement::kStreamed);
  INFO((placement == io::WeightPlacement::kResident ? "DRAM-resident" : "staged") << " host bytes");
  const Placement moved =
      AllMoved(checkpoint, placement == io::WeightPlacement::kResident ? Tier::kDram : Tier::kNvme);
  auto weights = io::OpenWeightSource(checkpoint, moved, {});
  const ModelLimits limits = OnePrompt(checkpoint, static_cast<int>(prompt.size()));
  const std::unique_ptr<Backend> backend = AllStreamed(checkpoint, limits, moved);
  for (const std::span<const std::byte> region : weights->HostMemory()) {
    backend->UseHostMemory(region);
  }
  Model engine(checkpoint, *backend, *weights, limits, moved);
  StepBatch batch;
  batch.AddChunk(0, 0, prompt, true);
  constexpr int kSteps = 3;
  uint64_t bytes_per_step = 0;
  for (const ExtentInfo& extent : checkpoint.extents) bytes_per_step += extent.size_bytes;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> logits(checkpoint.config.vocab_size);
    engine.Forward(batch, logits);
    double error = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      error = std::max(error, std::abs(static_cast<double>(logits[i]) - cpu[i]));
    }
    CHECK(error < 1e-3);
  }
  const TransferStats stats = backend->transfer_stats();
  CHECK(stats.bytes == kSteps * bytes_per_step);
  CHECK(stats.copy_seconds > 0);
}

TEST_CASE("cuda: a copy fence may be called late, twice, and after the backend is gone") {
  const LoadedModel& model = Stories260K();
  const Checkpoint& checkpoint = model.checkpoint;
  const Placement moved = AllMoved(checkpoint, Tier::kNvme);
  auto weights = io::OpenWeightSource(checkpoint, moved, {});
  std::unique_ptr<Backend> backend = AllStreamed(checkpoint, OnePrompt(checkpoint, 1), moved);
  for (const std::span<const std::byte> region : weights->HostMemory()) {
    backend->UseHostMemory(region);
  }
  const ExtentView extent = weights->Acquire(0);
  CHECK(backend->BindExtent(extent) != nullptr);
  const CopyFence fence = backend->UnbindExtent();
  REQUIRE(fence);
  CHECK_FALSE(backend->UnbindExtent());  // nothing bound: nothing to wait for
  fence();
  fence();
  // Bound again: the next copy may reuse the fence's event; waiting on it is still fine.
  CHECK(backend->BindExtent(extent) != nullptr);
  const CopyFence second = backend->UnbindExtent();
  fence();
  CHECK(backend->transfer_stats().bytes == 2 * extent.bytes.size());
  backend.reset();
  fence();
  second();
  weights->Release(0, second);
}

}  // namespace
}  // namespace zinf::testing
