// The planner, table-tested: model × budget → placement, staging and prediction.
#include <catch2/catch.hpp>

#include <algorithm>

#include "engine/error.h"
#include "engine/planner/planner.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"
#include "model_formats/weight_encoding.h"
#include "tests/support/shipped_config.h"

namespace zinf {

namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

Checkpoint ShippedConfig(const std::string& name) { return testing::ShippedConfigCheckpoint(name); }

PlannerInputs Inputs(const Checkpoint& checkpoint, uint64_t cpu_mem) {
  PlannerInputs inputs;
  inputs.checkpoint = &checkpoint;
  inputs.cpu_mem_bytes = cpu_mem;
  inputs.workload.batch_size = 2;  // 1 GiB of f32 KV cache for llama-2-7b
  inputs.workload.max_context = 512;
  return inputs;
}

}  // namespace

TEST_CASE("planner: a model that fits stays resident and says offload is not needed") {
  const Checkpoint model = ShippedConfig("llama-2-7b");  // 12.6 GiB in f16
  const Plan plan = MakePlan(Inputs(model, 64 * kGiB));
  CHECK_FALSE(plan.offload_needed);
  CHECK(plan.streamed_bytes_per_step == 0);
  CHECK(plan.staging_bytes == 0);
  for (Tier tier : plan.placement) CHECK(tier == Tier::kDevice);
  CHECK(plan.Summary().find("nothing is offloaded") != std::string::npos);
}

TEST_CASE("planner: under a budget, layers first, spread over the model, the rest streamed") {
  const Checkpoint model = ShippedConfig("llama-2-7b");
  struct Row {
    uint64_t budget;
    int min_resident_layers, max_resident_layers;
  };
  // budget → how many of the 32 layer extents (≈386 MiB each) stay resident.
  for (const Row& row : {Row{8 * kGiB, 10, 16}, Row{12 * kGiB, 20, 28}, Row{4 * kGiB, 1, 6}}) {
    INFO("budget " << row.budget / kGiB << " GiB");
    const Plan plan = MakePlan(Inputs(model, row.budget));
    CHECK(plan.offload_needed);
    CHECK(plan.total_dram_bytes() <= row.budget);
    // Layers (386 MiB) are larger than the embeddings (250 MiB): they are kept first, so the
    // staging buffers need only hold an embedding-sized extent once every layer is resident. The
    // resident ones are spread over the model, so that every run of streamed layers is short and
    // the disk reads while resident layers compute (a resident prefix left it idle then).
    int resident_layers = 0, streamed_run = 0, longest_streamed_run = 0;
    for (size_t i = 0; i < model.extents.size(); ++i) {
      if (model.extents[i].kind != ExtentKind::kLayer) continue;
      if (plan.placement[i] == Tier::kDevice) {
        ++resident_layers;
        streamed_run = 0;
      } else {
        longest_streamed_run = std::max(longest_streamed_run, ++streamed_run);
      }
    }
    // As even as 32 layers allow: no run longer than twice the average gap.
    REQUIRE(resident_layers > 0);
    CHECK(longest_streamed_run <= 2 * (32 / resident_layers));
    CHECK(resident_layers >= row.min_resident_layers);
    CHECK(resident_layers <= row.max_resident_layers);
    // Reads overlap compute; a third buffer is bought only when it predicts more than the layer
    // its DRAM could keep resident.
    CHECK(plan.placement.prefetch_depth >= 1);
    CHECK(plan.placement.staging_buffers == plan.placement.prefetch_depth + 1);
    CHECK(plan.bound == Bound::kDisk);
  }
}

TEST_CASE("planner: prefetch depth shrinks before the plan fails, and failure shows numbers") {
  const Checkpoint model = ShippedConfig("llama-2-70b");  // 1.6 GiB per layer extent in f16
  PlannerInputs inputs = Inputs(model, 0);
  const uint64_t fixed =
      KvCacheBytes(model.config, inputs.workload) + ActivationBytes(model.config, inputs.workload);
  const uint64_t largest = model.max_extent_padded_bytes();
  inputs.cpu_mem_bytes = fixed + 2 * largest;  // room for two staging buffers only
  CHECK(MakePlan(inputs).placement.prefetch_depth == 1);
  inputs.cpu_mem_bytes = fixed + largest;
  CHECK(MakePlan(inputs).placement.prefetch_depth == 0);
  inputs.cpu_mem_bytes = fixed + largest - 1;
  CHECK_THROWS_WITH(MakePlan(inputs), Catch::Contains("too small") && Catch::Contains("KV cache") &&
                                          Catch::Contains("staging buffer"));
}

TEST_CASE("planner: predictions follow the bound") {
  const Checkpoint model = ShippedConfig("llama-2-7b");
  PlannerInputs inputs = Inputs(model, 4 * kGiB);
  // Both disks far slower than the work, so that no stretch of resident layers outlasts the reads
  // queued ahead of it (near the balance the ring's depth costs a few percent: step_pipeline.h).
  inputs.bandwidths.disk_read_gbps = 1;
  const Plan slow_disk = MakePlan(inputs);
  inputs.bandwidths.disk_read_gbps *= 2;
  const Plan fast_disk = MakePlan(inputs);
  CHECK(slow_disk.bound == Bound::kDisk);
  CHECK(fast_disk.predicted_tokens_per_s == Approx(2 * slow_disk.predicted_tokens_per_s));
  // More DRAM never predicts less.
  double previous = 0;
  for (uint64_t budget = 4; budget <= 20; budget += 2) {
    const Plan plan = MakePlan(Inputs(model, budget * kGiB));
    CHECK(plan.predicted_tokens_per_s >= previous);
    previous = plan.predicted_tokens_per_s;
  }
}

TEST_CASE("planner: verifying streamed extents' checksums is part of the step's work") {
  // Each extent read from disk is checked (XXH3) before its products, on a thread of its own: with
  // no core to itself, that time adds to the work the reads overlap.
  const Checkpoint model = ShippedConfig("llama-2-7b");
  PlannerInputs inputs = Inputs(model, 8 * kGiB);
  inputs.bandwidths.disk_read_gbps = 1e7;  // the reads take no time
  inputs.bandwidths.checksum_gbps = 2;
  const Plan plan = MakePlan(inputs);
  REQUIRE(plan.streamed_bytes_per_step > 0);
  CHECK(plan.checksum_seconds_per_step == Approx(plan.streamed_bytes_per_step / 2e9));
  const double products = std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step);
  const double layers = products + plan.cpu_attention_seconds_per_step;
  CHECK(plan.predicted_tokens_per_s == Approx(2 / (plan.checksum_seconds_per_step + layers)));
  // A spare core checks while the layers compute.
  inputs.workload.spare_cores = 1;
  inputs.bandwidths.checksum_gbps = 4 * plan.checksum_seconds_per_step / layers;  // half of layers
  const Plan spare = MakePlan(inputs);
  REQUIRE(spare.checksum_seconds_per_step < layers);
  CHECK(spare.predicted_tokens_per_s == Approx(2 / layers));
  // The checks alone outlast the layers' work: they bound the step.
  inputs.bandwidths.checksum_gbps = plan.checksum_seconds_per_step / layers;  // twice layers
  const Plan slow = MakePlan(inputs);
  REQUIRE(slow.checksum_seconds_per_step > layers);
  CHECK(slow.predicted_tokens_per_s == Approx(2 / slow.checksum_seconds_per_step));
  CHECK(slow.bound == Bound::kChecksum);
  // Reads that take longer than the products but not than products and checks: the work binds.
  inputs.workload.spare_cores = 0;
  inputs.bandwidths.checksum_gbps = 2;
  inputs.bandwidths.disk_read_gbps =
      plan.streamed_bytes_per_step / ((products + plan.checksum_seconds_per_step / 2) * 1e9);
  const Plan work_bound = MakePlan(inputs);
  const double its_products =
      std::max(work_bound.memory_seconds_per_step, work_bound.compute_seconds_per_step);
  REQUIRE(work_bound.io_seconds_per_step > its_products);
  REQUIRE(work_bound.io_seconds_per_step < its_products + work_bound.checksum_seconds_per_step);
  CHECK(work_bound.bound != Bound::kDisk);
  // Nothing streamed, nothing to verify each step.
  const Plan resident = MakePlan(Inputs(model, 64 * kGiB));
  CHECK(resident.checksum_seconds_per_step == 0);
}

TEST_CASE("planner: products run at the rate of their weights' kernel") {
  // int8 and int4 matrices go through integer kernels with rates of their own (zinf calibrate
  // measures each); the float vectors and the head kept in f32 stay at the float rate.
  Checkpoint model;
  model.config =
      formats::LoadHfConfig(std::string(ZINF_SOURCE_DIR) + "/bench/configs/llama-110m.json");
  model.dtype = DType::kI8;
  model.extents = formats::LayoutExtents(
      formats::ExpectedExtents(model.config),
      formats::WeightEncoding::For(DType::kI8, DType::kF32, 64, {"lm_head"}));
  double float_elements = 0, int8_elements = 0;
  for (const ExtentInfo& extent : model.extents) {
    if (extent.kind == ExtentKind::kEmbedding) continue;
    for (const TensorInfo& tensor : extent.tensors) {
      (tensor.dtype == DType::kI8 ? int8_elements : float_elements) += tensor.num_elements();
    }
  }
  REQUIRE(int8_elements > 0);
  REQUIRE(float_elements > 0);
  PlannerInputs inputs = Inputs(model, 64 * kGiB);
  inputs.workload.batch_size = 64;
  inputs.bandwidths.compute_gflops = 100;
  const Plan as_floats = MakePlan(inputs);  // no integer rate: the float rate stands in
  CHECK(as_floats.compute_seconds_per_step ==
        Approx(2 * 64 * (float_elements + int8_elements) / 100e9));
  inputs.bandwidths.int8_gflops = 400;
  inputs.bandwidths.int4_gflops = 1;  // no int4 tensor: unused
  const Plan plan = MakePlan(inputs);
  CHECK(plan.compute_seconds_per_step ==
        Approx(2 * 64 * (float_elements / 100e9 + int8_elements / 400e9)));
}

TEST_CASE("planner: token rates interpolate in log(tokens) and hold at the ends") {
  const TokenRates rates{{{1, 10}, {8, 80}, {64, 320}}};
  CHECK(rates.Valid());
  CHECK(rates.At(1) == Approx(10));
  CHECK(rates.At(8) == Approx(80));
  CHECK(rates.At(64) == Approx(320));
  CHECK(rates.At(16) == Approx(160));  // a third of the way from 8 to 64 in log(tokens)
  CHECK(rates.At(2) == Approx(10 + 70.0 / 3));
  CHECK(rates.At(0.5) == Approx(10));  // an expert's share of one token: the smallest size
  CHECK(rates.At(1000) == Approx(320));
  CHECK(TokenRates{}.At(8) == 0);
  CHECK_FALSE(TokenRates{{{8, 80}, {8, 90}}}.Valid());
  CHECK_FALSE(TokenRates{{{8, 80}, {1, 10}}}.Valid());
  CHECK_FALSE(TokenRates{{{0, 80}}}.Valid());
  CHECK_FALSE(TokenRates{{{1, 0}}}.Valid());
}

TEST_CASE("planner: products run at the rate calibrate measured for their size and format") {
  // A product of a few tokens is bound by its weights' reads, of many by arithmetic: the rate a
  // step's products get is the one measured nearest its size (bf16 and f16 share theirs), and a
  // format measured at no size keeps its single rate.
  const Checkpoint model = ShippedConfig("llama-2-7b");  // every tensor f16
  double f16_elements = 0, other_elements = 0;
  for (const ExtentInfo& extent : model.extents) {
    if (extent.kind == ExtentKind::kEmbedding) continue;
    for (const TensorInfo& tensor : extent.tensors)
      (tensor.dtype == DType::kF16 ? f16_elements : other_elements) += tensor.num_elements();
  }
  REQUIRE(f16_elements > 0);
  PlannerInputs inputs = Inputs(model, 64 * kGiB);
  inputs.bandwidths.compute_gflops = 100;
  inputs.bandwidths.f16_by_tokens = TokenRates{{{1, 10}, {8, 80}, {64, 320}}};
  inputs.workload.max_context = 64;  // room for 128 sequences' KV cache
  for (const auto& [batch, f16_rate] : {std::pair{8, 80.0}, {16, 160.0}, {128, 320.0}}) {
    INFO("batch " << batch);
    inputs.workload.batch_size = batch;
    CHECK(MakePlan(inputs).compute_seconds_per_step ==
          Approx(2.0 * batch * (f16_elements / (f16_rate * 1e9) + other_elements / 100e9)));
  }
  CHECK(inputs.bandwidths.GflopsFor(DType::kBF16, 16) == Approx(160));
  CHECK(inputs.bandwidths.GflopsFor(DType::kF32, 16) == Approx(100));
}

TEST_CASE("planner: int4 products run at the rate calibrated for their group size") {
  // Each group's sums are scaled apart, so groups of 32 multiply slower than of 64: a model in
  // groups of 32 is predicted at 32's rate, and a size with no table at 64's (a cache from before).
  Checkpoint model = ShippedConfig("llama-2-7b");
  for (const int group_size : {32, 128}) {
    model.extents = formats::LayoutExtents(
        formats::ExpectedExtents(model.config),
        formats::WeightEncoding::For(DType::kQ4, DType::kF16, group_size, {}));
    double q4_elements = 0, other_elements = 0;
    for (const ExtentInfo& extent : model.extents) {
      if (extent.kind == ExtentKind::kEmbedding) continue;
      for (const TensorInfo& tensor : extent.tensors) {
        if (tensor.dtype == DType::kQ4) CHECK(tensor.group_size == group_size);
        (tensor.dtype == DType::kQ4 ? q4_elements : other_elements) += tensor.num_elements();
      }
    }
    REQUIRE(q4_elements > 0);
    PlannerInputs inputs = Inputs(model, 64 * kGiB);
    inputs.workload.batch_size = 8;
    inputs.bandwidths.compute_gflops = 100;  // the f16 norms' (no f16 table)
    inputs.bandwidths.int4_by_tokens = TokenRates{{{1, 40}, {64, 400}}};
    inputs.bandwidths.int4_g32_by_tokens = TokenRates{{{1, 20}, {64, 200}}};
    // At 8 tokens, halfway in log(tokens) between 1 and 64: 64's table reads 220, 32's 110.
    const double q4_rate = group_size == 32 ? 110 : 220;
    INFO("groups of " << group_size);
    CHECK(MakePlan(inputs).compute_seconds_per_step ==
          Approx(2.0 * 8 * (q4_elements / (q4_rate * 1e9) + other_elements / 100e9)));
    CHECK(inputs.bandwidths.GflopsFor(DType::kQ4, 8, group_size) == Approx(q4_rate));
  }
}

TEST_CASE("planner: CPU attention follows the products, over the positions attended") {
  // Attention reads each sequence's cache after the layer's products: its time adds to theirs.
  // It is the slower of reading the attended share of the cache and its arithmetic, 4 · head_dim
  // FLOPs per query head and key.
  const Checkpoint model = ShippedConfig("llama-2-7b");
  const ModelConfig& config = model.config;
  PlannerInputs inputs = Inputs(model, 64 * kGiB);
  inputs.workload.batch_size = 16;
  inputs.workload.max_context = 2048;
  inputs.bandwidths.dram_read_gbps = 20;
  inputs.bandwidths.compute_gflops = 400;
  inputs.bandwidths.cpu_attention_gflops = 50;
  const auto flops = [&](int attended) {
    return 4.0 * 16 * config.num_layers * config.num_heads * attended * config.head_dim;
  };
  for (const int mean : {0, 512, 2048}) {
    INFO("mean context " << mean);
    inputs.workload.mean_context = mean;
    const Plan plan = MakePlan(inputs);
    const int attended = mean > 0 ? mean : 2048;
    const double expected = std::max(static_cast<double>(plan.kv_bytes) * attended / 2048 / 20e9,
                                     flops(attended) / 50e9);
    CHECK(plan.cpu_attention_seconds_per_step == Approx(expected));
    const double products = std::max(plan.memory_seconds_per_step, plan.compute_seconds_per_step);
    CHECK(plan.predicted_tokens_per_s == Approx(16 / (products + expected)));
  }
  // Its arithmetic at a rate too low to hide: attention binds.
  inputs.workload.mean_context = 0;
  inputs.bandwidths.cpu_attention_gflops = 1;
  CHECK(MakePlan(inputs).bound == Bound::kCpuAttention);
  // Uncalibrated, a quarter of the float rate stands in.
  inputs.bandwidths.cpu_attention_gflops = 0;
  inputs.bandwidths.dram_read_gbps = 1e6;  // the arithmetic is the slower part
  CHECK(MakePlan(inputs).cpu_attention_seconds_per_step == Approx(flops(2048) / 100e9));
}

TEST_CASE("planner: two large extents beside small layers are kept together, shrinking the ring") {
  // llama-110m in f32: embeddings and head 93.8 MiB each, twelve layers of 27.0 MiB. Kept one
  // at a time, the first of the two large extents never fits, since the other, still streamed,
  // sizes the staging ring; kept together, the ring needs only hold a layer.
  Checkpoint model;
  model.config =
      formats::LoadHfConfig(std::string(ZINF_SOURCE_DIR) + "/bench/configs/llama-110m.json");
  model.dtype = DType::kF32;
  model.extents = formats::LayoutExtents(formats::ExpectedExtents(model.config), DType::kF32);
  PlannerInputs inputs = Inputs(model, model.total_bytes() * 3 / 4);
  inputs.workload.batch_size = 8;
  inputs.workload.max_context = 629;
  inputs.workload.kv_dtype = DType::kI8;
  const Plan plan = MakePlan(inputs);
  CHECK(plan.total_dram_bytes() <= inputs.cpu_mem_bytes);
  uint64_t largest_layer = 0;
  for (size_t i = 0; i < model.extents.size(); ++i) {
    if (model.extents[i].kind == ExtentKind::kLayer) {
      largest_layer = std::max(largest_layer, model.extents[i].padded_bytes);
    } else if (model.extents[i].padded_bytes > 64ull << 20) {
      CHECK(plan.placement[i] == Tier::kDevice);  // the embeddings and the head
    }
  }
  CHECK(plan.placement.staging_buffer_bytes == largest_layer);
  CHECK(plan.placement.prefetch_depth >= 1);  // reads overlap compute
  // More DRAM never predicts less, and every plan fits its budget.
  double previous = 0;
  for (uint64_t percent = 50; percent <= 100; percent += 5) {
    inputs.cpu_mem_bytes = model.total_bytes() * percent / 100;
    INFO("budget " << percent << "% of the checkpoint");
    Plan budget_plan;
    try {
      budget_plan = MakePlan(inputs);
    } catch (const Error&) {
      CHECK(previous == 0);  // only the smallest budgets may not fit
      continue;
    }
    CHECK(budget_plan.total_dram_bytes() <= inputs.cpu_mem_bytes);
    CHECK(budget_plan.predicted_tokens_per_s >= previous);
    previous = budget_plan.predicted_tokens_per_s;
  }
}

}  // namespace zinf

namespace zinf {

TEST_CASE("planner: --batch-size auto on the CPU takes the largest batch within 3% of the best") {
  const Checkpoint model = ShippedConfig("llama-2-7b");
  PlannerInputs inputs = Inputs(model, 16 * kGiB);
  const BatchChoice choice = ChooseBatchSize(inputs, 256);
  CHECK(choice.why.find("auto") != std::string::npos);
  CHECK(choice.plan.total_dram_bytes() <= 16 * kGiB);
  // Every fitting power of two, by prediction.
  std::vector<std::pair<int, double>> predicted;
  double best = 0;
  for (int batch = 1; batch <= 256; batch *= 2) {
    PlannerInputs candidate = inputs;
    candidate.workload.batch_size = batch;
    try {
      predicted.emplace_back(batch, MakePlan(candidate).predicted_tokens_per_s);
      best = std::max(best, predicted.back().second);
    } catch (const Error&) {
      CHECK(batch > choice.batch_size);  // only batches larger than the choice may not fit
    }
  }
  CHECK(choice.plan.predicted_tokens_per_s >= 0.97 * best);
  for (const auto& [batch, rate] : predicted) {
    if (batch > choice.batch_size) CHECK(rate < 0.97 * best);  // larger ones lost speed
  }
  CHECK(choice.why.find("the largest within 3%") != std::string::npos);
  // Capped by the number of requests.
  CHECK(ChooseBatchSize(inputs, 3).batch_size <= 3);
}

TEST_CASE("planner: --weights resident picks only batches whose resident plan fits the budget") {
  // llama-2-7b in f16 is 12.6 GiB; at context 512 each sequence adds 0.5 GiB of f32 KV cache.
  const Checkpoint model = ShippedConfig("llama-2-7b");
  const PlannerInputs inputs = Inputs(model, 16 * kGiB);
  auto resident = [](const PlannerInputs& candidate) {
    return PlaceEveryExtent(candidate, Tier::kDevice, 1);
  };
  const BatchChoice choice = ChooseBatchSize(inputs, 256, resident);
  CHECK(choice.plan.total_dram_bytes() <= 16 * kGiB);
  for (Tier tier : choice.plan.placement) CHECK(tier == Tier::kDevice);
  // The planner's own choice streams weights to make room for a larger batch's KV cache; the
  // resident one stops where the whole model and the KV cache still fit.
  CHECK(choice.batch_size < ChooseBatchSize(inputs, 256).batch_size);
  PlannerInputs larger = inputs;
  larger.workload.batch_size = 2 * choice.batch_size;
  CHECK_THROWS_WITH(PlaceEveryExtent(larger, Tier::kDevice, 1),
                    Catch::Contains("--weights resident") && Catch::Contains("more than the") &&
                        Catch::Contains("lower --batch-size"));
  // Nothing fits: batch 1 alone is larger than the budget, and the choice says so.
  CHECK_THROWS_WITH(ChooseBatchSize(Inputs(model, 8 * kGiB), 256, resident),
                    Catch::Contains("needs"));
}

TEST_CASE("planner: a fixed prefetch depth places extents for that ring, within the budget") {
  // Llama-2-13B in f16 under 16 GiB, 32 sequences: each buffer more in the ring is a layer fewer
  // resident, never a plan over the budget (--prefetch-depth used to re-evaluate the chosen
  // placement at the depth asked for, so a deeper ring overran the budget).
  const Checkpoint model = ShippedConfig("llama-2-13b");
  PlannerInputs inputs = Inputs(model, uint64_t{16} << 30);
  inputs.workload.batch_size = 32;
  inputs.workload.max_context = 8;
  uint64_t previous_resident = ~uint64_t{0};
  for (int depth = 0; depth <= 3; ++depth) {
    INFO("depth " << depth);
    inputs.max_prefetch_depth = inputs.min_prefetch_depth = depth;
    const Plan plan = MakePlan(inputs);
    CHECK(plan.placement.prefetch_depth == depth);
    CHECK(plan.placement.staging_buffers == depth + 1);
    CHECK(plan.resident_bytes + plan.staging_bytes + plan.kv_bytes + plan.activation_bytes <=
          inputs.cpu_mem_bytes);
    CHECK(plan.resident_bytes < previous_resident);
    previous_resident = plan.resident_bytes;
  }
}

}  // namespace zinf
