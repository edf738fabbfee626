// The CUDA planner, table-tested: device memory first (after KV cache, activations and the slot
// ring), then pinned DRAM, then NVMe; the prediction is the slowest of disk, PCIe, HBM, compute.
#include <catch2/catch.hpp>

#include <algorithm>

#include "engine/error.h"
#include "engine/planner/planner.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "tests/support/shipped_config.h"

namespace zinf {

namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

Checkpoint ShippedConfig(const std::string& name) { return testing::ShippedConfigCheckpoint(name); }

PlannerInputs CudaInputs(const Checkpoint& checkpoint, uint64_t gpu_mem, uint64_t cpu_mem,
                         int batch = 8) {
  PlannerInputs inputs;
  inputs.checkpoint = &checkpoint;
  inputs.backend = BackendKind::kCuda;
  inputs.gpu_mem_bytes = gpu_mem;
  inputs.cpu_mem_bytes = cpu_mem;
  inputs.workload.batch_size = batch;
  inputs.workload.max_context = 1024;
  return inputs;
}

int64_t Count(const Plan& plan, Tier tier) {
  return std::count(plan.placement.begin(), plan.placement.end(), tier);
}

}  // namespace

TEST_CASE("cuda planner: a model that fits the device stays there, offload is pointless") {
  const Checkpoint model = ShippedConfig("llama-2-7b");  // 12.6 GiB in f16
  const Plan plan = MakePlan(CudaInputs(model, 80 * kGiB, 24 * kGiB));
  CHECK_FALSE(plan.offload_needed);
  CHECK(Count(plan, Tier::kDevice) == static_cast<int64_t>(model.extents.size()));
  // DRAM holds only the staging that brings the weights to the device once: two buffers (one
  // read in flight, one being copied) of the largest extent.
  uint64_t largest = 0;
  for (const ExtentInfo& extent : model.extents) largest = std::max(largest, extent.padded_bytes);
  CHECK(plan.total_dram_bytes() == 2 * largest);
  CHECK(plan.pinned_bytes == 0);
  CHECK(plan.Summary().find("nothing is offloaded") != std::string::npos);
}

TEST_CASE("cuda planner: device, then pinned DRAM, then NVMe, each within its budget") {
  const Checkpoint model = ShippedConfig("opt-30b");  // about 56 GiB in f16
  struct Row {
    uint64_t gpu_mem, cpu_mem;
    bool any_device, any_dram, any_nvme;
    Bound bound;
  };
  const Row rows[] = {
      // Fits: all on the device, where batch 8's attention walks over 1024 positions (48 layers ×
      // 1024 keys × 0.7 µs, 34 ms) outlast reading the 56 GiB (20 ms).
      {80 * kGiB, 128 * kGiB, true, false, false, Bound::kGpuAttention},
      {16 * kGiB, 128 * kGiB, true, true, false, Bound::kPcie},  // the rest pinned, over PCIe
      {16 * kGiB, 24 * kGiB, true, true, true, Bound::kDisk},    // DRAM full too: NVMe the slowest
  };
  for (const Row& row : rows) {
    INFO("gpu " << row.gpu_mem / kGiB << " GiB, cpu " << row.cpu_mem / kGiB << " GiB");
    const Plan plan = MakePlan(CudaInputs(model, row.gpu_mem, row.cpu_mem));
    CHECK((Count(plan, Tier::kDevice) > 0) == row.any_device);
    CHECK((Count(plan, Tier::kDram) > 0) == row.any_dram);
    CHECK((Count(plan, Tier::kNvme) > 0) == row.any_nvme);
    CHECK(plan.device_bytes <= row.gpu_mem);
    CHECK(plan.total_dram_bytes() <= row.cpu_mem);
    CHECK(plan.bound == row.bound);
    if (plan.offload_needed) {
      CHECK(plan.placement.prefetch_depth >=
            1);  // at least two slots: copy one while computing the other
      CHECK(plan.device_slot_bytes >= 2 * plan.placement.staging_buffer_bytes);
    }
    // DRAM staging, counted in the budget: device-resident extents pass through it once and NVMe
    // ones every step; with NVMe one more buffer for the copy still reading the last released.
    uint64_t largest_passing = 0;
    for (size_t i = 0; i < model.extents.size(); ++i) {
      if (plan.placement[i] != Tier::kDram) {
        largest_passing = std::max(largest_passing, model.extents[i].padded_bytes);
      }
    }
    CHECK(plan.placement.staging_buffer_bytes == largest_passing);
    CHECK(plan.placement.staging_buffers ==
          std::max(plan.placement.prefetch_depth, 1) + 1 + (row.any_nvme ? kCudaCopyBuffers : 0));
    CHECK(plan.staging_bytes ==
          plan.placement.staging_buffers * plan.placement.staging_buffer_bytes);
    // Every byte is placed once: resident + pinned + streamed = the checkpoint.
    CHECK(plan.resident_bytes + plan.pinned_bytes + plan.streamed_bytes_per_step ==
          model.total_bytes());
  }
}

TEST_CASE("cuda planner: the prediction is the slowest part of a step") {
  const Checkpoint model = ShippedConfig("opt-30b");
  PlannerInputs inputs = CudaInputs(model, 16 * kGiB, 128 * kGiB, 4);
  inputs.bandwidths.h2d_gbps = 25;
  const Plan plan = MakePlan(inputs);
  REQUIRE(plan.bound == Bound::kPcie);
  const double moved = static_cast<double>(plan.pinned_bytes + plan.streamed_bytes_per_step);
  CHECK(plan.h2d_seconds_per_step == Approx(moved / 25e9));
  CHECK(plan.predicted_tokens_per_s == Approx(4 / plan.h2d_seconds_per_step));
}

TEST_CASE("cuda planner: hashing what is read from disk binds only when slower than the disk") {
  // The verifier thread hashes each extent as its chunks land, beside the reads and the device.
  const Checkpoint model = ShippedConfig("opt-30b");
  PlannerInputs inputs = CudaInputs(model, 16 * kGiB, 24 * kGiB);
  inputs.bandwidths.disk_read_gbps = 6;
  inputs.bandwidths.checksum_gbps = 10;
  const Plan fast = MakePlan(inputs);
  REQUIRE(fast.streamed_bytes_per_step > 0);
  CHECK(fast.checksum_seconds_per_step ==
        Approx(static_cast<double>(fast.streamed_bytes_per_step) / 10e9));
  CHECK(fast.bound == Bound::kDisk);
  inputs.bandwidths.checksum_gbps = 3;  // a slow core: hashing outlasts the reads
  const Plan slow = MakePlan(inputs);
  CHECK(slow.bound == Bound::kChecksum);
  CHECK(slow.predicted_tokens_per_s == Approx(8 / slow.checksum_seconds_per_step));
}

TEST_CASE("cuda planner: an offloaded cache's CPU attention adds to the compute stream's time") {
  // The CPU attends in host callbacks of the compute stream: the GPU's work and the CPU's add up,
  // while the weight copies run beside both.
  const Checkpoint model = ShippedConfig("opt-30b");
  PlannerInputs inputs = CudaInputs(model, 16 * kGiB, 128 * kGiB, 16);
  inputs.workload.kv_offload = true;
  inputs.bandwidths.h2d_gbps = 25;
  // The arithmetic fast enough that reading the cache is the CPU's part (its time as the CPU
  // backend's attention is planned: tests/engine/test_planner.cpp).
  inputs.bandwidths.cpu_attention_gflops = 1e6;
  for (const double dram_gbps : {2.0, 400.0}) {
    INFO("DRAM read at " << dram_gbps << " GB/s");
    inputs.bandwidths.dram_read_gbps = dram_gbps;
    const Plan plan = MakePlan(inputs);
    const double cpu = static_cast<double>(plan.kv_bytes) / (dram_gbps * 1e9);
    const double gpu = std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step) +
                       plan.launch_seconds_per_step + plan.logits_seconds_per_step;
    CHECK(plan.gpu_attention_seconds_per_step == 0);  // the device holds no cache to walk
    const double step = std::max({plan.io_seconds_per_step, plan.h2d_seconds_per_step, gpu + cpu});
    CHECK(plan.predicted_tokens_per_s == Approx(16 / step));
    CHECK(plan.bound == (dram_gbps < 10 ? Bound::kCpuAttention : Bound::kPcie));
  }
}

TEST_CASE("cuda planner: launches, attention and dequantisation add to the GEMMs' time") {
  // The compute stream runs a step's kernels one after another: the GEMMs take the slower of
  // their reads and their arithmetic, and the kernels' fixed costs, the attention walks over the
  // device's cache and (bf16 compute) the dequantisation of int8/int4 matrices come on top.
  Checkpoint model = ShippedConfig("llama-2-7b");  // 32 layers, 32 heads
  PlannerInputs inputs = CudaInputs(model, 80 * kGiB, 24 * kGiB, 16);
  inputs.workload.mean_context = 600;
  Bandwidths& bw = inputs.bandwidths;
  bw.gpu_layer_launch_seconds = 100e-6;
  bw.gpu_attention_lone_key_seconds = 1e-6;
  bw.gpu_attention_key_seconds = 3e-6;
  bw.gpu_attention_wave_blocks = 1024;
  bw.gpu_dequant_i8_seconds = 4e-12;
  bw.gpu_dequant_q4_seconds = 8e-12;
  bw.gpu_logits_d2h_gbps = 4;
  bw.host_sample_seconds_per_logit = 2e-9;
  const auto step_of = [](const Plan& plan) {
    return std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step) +
           plan.launch_seconds_per_step + plan.gpu_attention_seconds_per_step +
           plan.dequant_seconds_per_step + plan.logits_seconds_per_step;
  };
  const Plan f16 = MakePlan(inputs);
  REQUIRE_FALSE(f16.offload_needed);
  // Each layer's launches and one layer's worth for the embedding, final norm and head.
  CHECK(f16.launch_seconds_per_step == Approx(33 * 100e-6));
  // 16 rows of 32,000 logits: 4 bytes each at 4 GB/s, and 2 ns to pick.
  CHECK(f16.logits_seconds_per_step == Approx(16 * 32000 * (1e-9 + 2e-9)));
  // 16 rows × 32 heads = 512 walks, half a wave: halfway between the lone and the wave rate,
  // over the mean context (not the cache's 1024 positions).
  CHECK(f16.gpu_attention_seconds_per_step == Approx(32 * 600 * 2e-6));
  CHECK(f16.dequant_seconds_per_step == 0);
  CHECK(f16.predicted_tokens_per_s == Approx(16 / step_of(f16)));
  CHECK(f16.bound == Bound::kGpuAttention);

  // 64 rows: two full waves at the wave rate.
  inputs.workload.batch_size = 64;
  const Plan wide = MakePlan(inputs);
  CHECK(wide.gpu_attention_seconds_per_step == Approx(32 * 600 * 2 * 3e-6));

  // int4 under bf16 compute: each weight dequantised, then read as bf16 by its GEMM.
  inputs.workload.batch_size = 16;
  model.dtype = DType::kQ4;
  const std::vector<ExtentInfo> f16_extents = model.extents;
  model.extents =
      formats::LayoutExtents(formats::ExpectedExtents(model.config),
                             formats::WeightEncoding::For(DType::kQ4, DType::kF16, 64, {}));
  const Plan q4 = MakePlan(inputs);
  CHECK(q4.dequant_seconds_per_step > 0);
  // Every multiplied element but the norms' vectors (4e-5 of them) is a dequantised weight.
  const double multiplied = f16.compute_seconds_per_step * (bw.device_tflops * 1e12) / (2.0 * 16);
  CHECK(q4.dequant_seconds_per_step / 8e-12 == Approx(multiplied).epsilon(1e-4));
  // The GEMMs read bf16 copies, as many bytes as f16 weights (the dequantisation's time covers the
  // stored nibbles): only the embedding table, looked up in its stored form, reads less.
  const auto embedding_bytes = [](const std::vector<ExtentInfo>& extents) {
    for (const ExtentInfo& extent : extents) {
      if (extent.kind == ExtentKind::kEmbedding) return static_cast<double>(extent.padded_bytes);
    }
    return 0.0;
  };
  const double read_bytes_per_second = bw.device_gbps * 1e9;
  CHECK(q4.memory_seconds_per_step * read_bytes_per_second ==
        Approx(f16.memory_seconds_per_step * read_bytes_per_second -
               (embedding_bytes(f16_extents) - embedding_bytes(model.extents)))
            .epsilon(1e-4));
  // A dequantising launch per quantized matrix: seven a layer, and the head.
  CHECK(q4.launch_seconds_per_step ==
        Approx(f16.launch_seconds_per_step + (32 * 7 + 1) * 100e-6 / kLaunchesPerLayer));
  CHECK(q4.predicted_tokens_per_s == Approx(16 / step_of(q4)));
  // f32 compute multiplies the stored nibbles in the CPU's arithmetic: nothing is dequantised.
  inputs.workload.gpu_compute = GpuCompute::kF32;
  CHECK(MakePlan(inputs).dequant_seconds_per_step == 0);
}

TEST_CASE("cuda planner: experts the CPU computes are not dequantised on the GPU") {
  // Mixtral-8x7B in int4 on 24 GiB: the experts the device does not hold are computed by the CPU
  // from DRAM with --moe-experts cpu, so the GPU neither dequantises nor reads them.
  Checkpoint model = ShippedConfig("mixtral-8x7b");
  model.extents =
      formats::LayoutExtents(formats::ExpectedExtents(model.config),
                             formats::WeightEncoding::For(DType::kQ4, DType::kF16, 64, {}));
  PlannerInputs inputs = CudaInputs(model, 24 * kGiB, 128 * kGiB, 16);
  inputs.workload.moe_experts = MoeExperts::kGpu;
  const Plan copied = MakePlan(inputs);
  inputs.workload.moe_experts = MoeExperts::kCpu;
  const Plan on_host = MakePlan(inputs);
  REQUIRE(on_host.placement.host_computes_experts);
  REQUIRE(on_host.offload_needed);
  CHECK(on_host.dequant_seconds_per_step > 0);  // the attention and the experts it holds
  CHECK(on_host.dequant_seconds_per_step < copied.dequant_seconds_per_step);
  CHECK(on_host.launch_seconds_per_step < copied.launch_seconds_per_step);
}

TEST_CASE("cuda planner: offloaded, larger batches win until the device is full") {
  // The ZeRO-Inference finding: with weights crossing PCIe every step, each step costs about the
  // same whatever the batch, so the batch grows until the KV cache crowds the device (OPT-30B's
  // is 0.33 GiB per sequence at 256 positions).
  const Checkpoint model = ShippedConfig("opt-30b");
  PlannerInputs resident = CudaInputs(model, 80 * kGiB, 24 * kGiB);
  PlannerInputs offload = CudaInputs(model, 16 * kGiB, 128 * kGiB);
  resident.workload.max_context = offload.workload.max_context = 256;
  const BatchChoice choice = ChooseBatchSize(resident, 256);
  const BatchChoice offloaded = ChooseBatchSize(offload, 256);
  CHECK(offloaded.batch_size >= 16);
  CHECK(offloaded.plan.offload_needed);
  // Of the batches within 3%, the smallest: device memory is left to resident layers.
  CHECK(offloaded.why.find("the smallest within 3%") != std::string::npos);
  CHECK(choice.plan.predicted_tokens_per_s > offloaded.plan.predicted_tokens_per_s);
}

TEST_CASE("cuda planner: embeddings and head claim the device together, slots sized to a layer") {
  // llama-110m in f32: embeddings and head 93.8 MiB each, layers 27.0 MiB. With 260 MiB for
  // weights and two slots, neither large extent fits on its own (the other, still moved, sizes
  // the slots: 93.8 + 2 × 93.8 > 260); together they do (187.6 + 2 × 27.0), and that moves 324
  // MiB per step instead of 458.
  Checkpoint model;
  model.config =
      formats::LoadHfConfig(std::string(ZINF_SOURCE_DIR) + "/bench/configs/llama-110m.json");
  model.dtype = DType::kF32;
  model.extents = formats::LayoutExtents(formats::ExpectedExtents(model.config), DType::kF32);
  PlannerInputs inputs = CudaInputs(model, 80 * kGiB, 24 * kGiB, 4);
  inputs.max_prefetch_depth = 1;
  const Plan roomy = MakePlan(inputs);
  inputs.gpu_mem_bytes =
      roomy.kv_bytes + roomy.activation_bytes + roomy.scratch_bytes + (260ull << 20);
  const Plan plan = MakePlan(inputs);
  REQUIRE(plan.offload_needed);
  CHECK(plan.device_bytes <= inputs.gpu_mem_bytes);
  uint64_t largest_layer = 0;
  for (size_t i = 0; i < model.extents.size(); ++i) {
    if (model.extents[i].kind == ExtentKind::kLayer) {
      largest_layer = std::max(largest_layer, model.extents[i].padded_bytes);
      CHECK(plan.placement[i] == Tier::kDram);
    } else if (model.extents[i].padded_bytes > 64ull << 20) {
      CHECK(plan.placement[i] == Tier::kDevice);
    }
  }
  CHECK(plan.device_slot_bytes == 2 * largest_layer);
}

TEST_CASE("cuda planner: an offloaded KV cache lets the batch grow at least 2x past the device") {
  // OPT-30B on a 16 GiB GPU with 128 GiB of DRAM, 1024 positions per sequence: on the device the
  // KV cache (1.3 GiB per sequence in bf16) leaves room for 8 sequences; in DRAM (the CPU
  // backend's f32 layout, 2.6 GiB each) it competes only with pinned weights.
  const Checkpoint model = ShippedConfig("opt-30b");
  auto largest_batch = [&](bool offload) {
    int largest = 0;
    for (int batch = 1; batch <= 256; batch *= 2) {
      PlannerInputs inputs = CudaInputs(model, 16 * kGiB, 128 * kGiB, batch);
      inputs.workload.kv_offload = offload;
      try {
        const Plan plan = MakePlan(inputs);
        CHECK(plan.device_bytes <= inputs.gpu_mem_bytes);
        CHECK(plan.total_dram_bytes() <= inputs.cpu_mem_bytes);
        CHECK(plan.kv_tier == (offload ? Tier::kDram : Tier::kDevice));
        CHECK(plan.device_kv_bytes() == (offload ? 0 : plan.kv_bytes));
        largest = batch;
      } catch (const Error&) {
        break;
      }
    }
    return largest;
  };
  const int on_device = largest_batch(false), offloaded = largest_batch(true);
  INFO("largest batch: " << on_device << " with the KV cache on the device, " << offloaded
                         << " offloaded");
  CHECK(on_device >= 1);
  CHECK(offloaded >= 2 * on_device);
  // An offloaded cache larger than DRAM is refused with the numbers.
  PlannerInputs huge = CudaInputs(model, 16 * kGiB, 24 * kGiB, 64);
  huge.workload.kv_offload = true;
  try {
    MakePlan(huge);
    FAIL("expected an error");
  } catch (const Error& error) {
    CHECK(std::string(error.what()).find("offloaded KV cache") != std::string::npos);
  }
}

TEST_CASE("cuda planner: a device too small for two weight slots says what it needs") {
  const Checkpoint model = ShippedConfig("llama-2-70b");
  try {
    MakePlan(CudaInputs(model, 1 * kGiB, 256 * kGiB));
    FAIL("expected an error");
  } catch (const Error& error) {
    const std::string message = error.what();
    CHECK(message.find("--gpu-mem 1.00 GiB is too small") != std::string::npos);
    CHECK(message.find("two weight slots") != std::string::npos);
  }
}

}  // namespace zinf
