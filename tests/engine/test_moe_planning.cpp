// Routing and planning of mixture-of-experts models: the host-side router against hand-computed
// cases, and the planner's expert-aware placement and bytes per step on a shipped MoE config.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/expert_routing.h"
#include "engine/planner/planner.h"
#include "engine/routing_profile.h"
#include "tests/support/shipped_config.h"

namespace zinf {

namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

MoeConfig Moe(int experts, int k, bool normalize) {
  MoeConfig moe;
  moe.num_experts = experts;
  moe.experts_per_token = k;
  moe.normalize_top_k = normalize;
  return moe;
}

}  // namespace

TEST_CASE("routing: softmax over all experts, top-k, optional renormalisation, grouped by expert") {
  // Token 0 prefers experts 2 then 0; token 1 prefers 3 then 2.
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f,  //
                                     0.0f, 0.0f, 1.0f, 3.0f};
  StepRouting routing;
  routing.Route(logits, 2, Moe(4, 2, false));
  const double z0 = std::exp(1.0) + 1 + std::exp(2.0) + std::exp(-1.0);
  const auto& e = routing.experts();
  REQUIRE(e.size() == 4);
  CHECK(e[0].rows == std::vector<int>{0});
  CHECK(e[1].rows.empty());
  CHECK(e[2].rows == std::vector<int>{0, 1});
  CHECK(e[3].rows == std::vector<int>{1});
  CHECK(e[2].weights[0] == Approx(std::exp(2.0) / z0));  // unnormalised: the softmax probability
  CHECK(routing.num_selected() == 3);

  routing.Route(logits, 2, Moe(4, 2, true));
  CHECK(routing.experts()[2].weights[0] + routing.experts()[0].weights[0] == Approx(1.0));
  CHECK(routing.experts()[2].weights[0] == Approx(std::exp(2.0) / (std::exp(2.0) + std::exp(1.0))));

  // Ties go to the lower index, as torch.topk picks them on CPU.
  const std::vector<float> tied = {0.5f, 0.5f, 0.5f, 0.0f};
  routing.Route(tied, 1, Moe(4, 2, true));
  CHECK(routing.experts()[0].rows.size() == 1);
  CHECK(routing.experts()[1].rows.size() == 1);
  CHECK(routing.experts()[2].rows.empty());
}

TEST_CASE("planner: experts are placed after the always-used extents and counted at their share") {
  const Checkpoint model = testing::ShippedConfigCheckpoint("mixtral-8x7b");  // f16, 87 GiB
  REQUIRE(model.config.is_moe());
  CHECK(RoutedShare(model.config, 1) == Approx(0.25));  // k/E
  CHECK(RoutedShare(model.config, 16) == Approx(1 - std::pow(0.75, 16)));

  PlannerInputs inputs;
  inputs.checkpoint = &model;
  inputs.cpu_mem_bytes = 24 * kGiB;
  inputs.workload.batch_size = 1;
  inputs.workload.max_context = 512;
  const Plan plan = MakePlan(inputs);
  REQUIRE(plan.offload_needed);
  uint64_t dense_streamed = 0, experts_streamed = 0;
  bool dense_resident = true;
  for (size_t i = 0; i < model.extents.size(); ++i) {
    const bool expert = model.extents[i].kind == ExtentKind::kExpert;
    if (plan.placement[i] == Tier::kNvme) {
      (expert ? experts_streamed : dense_streamed) += model.extents[i].padded_bytes;
    }
    if (!expert) dense_resident = dense_resident && plan.placement[i] == Tier::kDevice;
  }
  CHECK(dense_resident);  // 3 GiB of attention, embeddings and head: always used, kept first
  CHECK(dense_streamed == 0);
  // A one-token step reads k of E experts of each layer: a quarter of the streamed experts.
  CHECK(static_cast<double>(plan.streamed_bytes_per_step) ==
        Approx(0.25 * static_cast<double>(experts_streamed)).epsilon(1e-6));
  // Staging holds the prefetch ring and, beside it, the 2 experts a step routes to per layer.
  CHECK(plan.placement.expert_buffers == 2);
  CHECK(plan.placement.staging_buffers ==
        plan.placement.prefetch_depth + 1 + plan.placement.expert_buffers);
}

}  // namespace zinf

namespace zinf {

TEST_CASE("planner: a routing profile keeps the most used experts resident and predicts fewer "
          "expert bytes") {
  const Checkpoint model = testing::ShippedConfigCheckpoint("mixtral-8x7b");  // 8 experts, top-2
  const ModelConfig& c = model.config;
  // Skewed use: in every layer experts 0 and 1 take 90% of the routings (the rest spread evenly),
  // so a step's expected expert reads fall when the hot pair is held.
  RoutingProfile profile(c);
  for (int layer = 0; layer < c.num_layers; ++layer) {
    std::vector<uint64_t> counts(c.moe.num_experts, 100);  // 6 × 100 = 600 of 6000
    counts[0] = 2700;
    counts[1] = 2700;
    profile.SetLayer(layer, counts, 3000);  // 3000 tokens × top-2
  }
  CHECK(profile.TokenShare(0, 0) == Approx(0.9));
  CHECK(profile.TokenShare(0, 5) == Approx(100.0 / 3000));

  PlannerInputs inputs;
  inputs.checkpoint = &model;
  inputs.cpu_mem_bytes = 40 * kGiB;  // the dense part and some experts, not all 87 GiB
  inputs.workload.batch_size = 1;
  inputs.workload.max_context = 512;
  const Plan uniform = MakePlan(inputs);
  inputs.routing = &profile;
  const Plan profiled = MakePlan(inputs);
  REQUIRE(profiled.offload_needed);

  // Every hot expert is held before any cold one.
  int hot_held = 0, cold_held = 0;
  for (size_t i = 0; i < model.extents.size(); ++i) {
    const ExtentInfo& extent = model.extents[i];
    if (extent.kind != ExtentKind::kExpert || profiled.placement[i] != Tier::kDevice) continue;
    (extent.expert < 2 ? hot_held : cold_held) += 1;
  }
  CHECK(hot_held == 2 * c.num_layers);
  CHECK(cold_held < (c.moe.num_experts - 2) * c.num_layers);
  // Streamed experts are the cold ones, each used by a one-token step with p = 1/30.
  double expected = 0;
  for (size_t i = 0; i < model.extents.size(); ++i) {
    if (profiled.placement[i] == Tier::kNvme) {
      expected += model.extents[i].padded_bytes *
                  profile.TokenShare(model.extents[i].layer, model.extents[i].expert);
    }
  }
  CHECK(static_cast<double>(profiled.streamed_bytes_per_step) == Approx(expected).epsilon(1e-6));
  CHECK(profiled.streamed_bytes_per_step < uniform.streamed_bytes_per_step / 2);
  CHECK(profiled.predicted_tokens_per_s > uniform.predicted_tokens_per_s);
}

}  // namespace zinf

namespace zinf {

TEST_CASE("CUDA planner, --moe-experts: the CPU computes off-device experts when it is faster") {
  const Checkpoint model = testing::ShippedConfigCheckpoint("mixtral-8x7b");  // f16, 87 GiB
  PlannerInputs inputs;
  inputs.checkpoint = &model;
  inputs.backend = BackendKind::kCuda;
  inputs.gpu_mem_bytes = 24 * kGiB;
  inputs.cpu_mem_bytes = 120 * kGiB;  // every expert fits in DRAM
  inputs.workload.batch_size = 1;
  inputs.workload.max_context = 512;
  inputs.bandwidths.h2d_gbps = 25;         // PCIe 4.0
  inputs.bandwidths.dram_read_gbps = 100;  // a server's DDR5, four times the link
  inputs.bandwidths.compute_gflops = 1000;

  inputs.workload.moe_experts = MoeExperts::kGpu;
  const Plan copied = MakePlan(inputs);
  inputs.workload.moe_experts = MoeExperts::kCpu;
  const Plan on_cpu = MakePlan(inputs);
  REQUIRE(copied.offload_needed);
  CHECK_FALSE(copied.placement.host_computes_experts);
  CHECK(copied.cpu_experts_seconds_per_step == 0);
  REQUIRE(on_cpu.placement.host_computes_experts);

  // With the CPU computing them, off-device experts cross no link: PCIe carries only what is
  // not an expert, and the CPU reads the routed experts' bytes from DRAM.
  double host_expert_bytes = 0;
  for (size_t i = 0; i < model.extents.size(); ++i) {
    const ExtentInfo& extent = model.extents[i];
    if (extent.kind == ExtentKind::kExpert && on_cpu.placement[i] != Tier::kDevice) {
      CHECK(on_cpu.placement[i] == Tier::kDram);
      host_expert_bytes += 0.25 * extent.padded_bytes;  // a one-token step: k/E of each
    }
  }
  REQUIRE(host_expert_bytes > 0);
  CHECK(on_cpu.cpu_experts_seconds_per_step ==
        Approx(host_expert_bytes / (100 * 1e9)).epsilon(1e-6));
  CHECK(on_cpu.h2d_seconds_per_step < copied.h2d_seconds_per_step / 10);
  CHECK(on_cpu.host_expert_activation_bytes > 0);
  CHECK(on_cpu.total_dram_bytes() <= inputs.cpu_mem_bytes);
  // Experts never reach the device, so its weight slots need not hold one.
  CHECK(on_cpu.device_slot_bytes < copied.device_slot_bytes);
  CHECK(on_cpu.Summary().find("computed by the CPU") != std::string::npos);

  // auto: at batch 1 DRAM beats the link; at batch 64 the CPU's arithmetic (every expert used,
  // each by k/E of 64 tokens) is slower than copying every expert over PCIe.
  inputs.workload.moe_experts = MoeExperts::kAuto;
  const Plan auto_one = MakePlan(inputs);
  CHECK(auto_one.placement.host_computes_experts);
  CHECK(auto_one.predicted_tokens_per_s ==
        Approx(std::max(on_cpu.predicted_tokens_per_s, copied.predicted_tokens_per_s)));
  CHECK(on_cpu.predicted_tokens_per_s > copied.predicted_tokens_per_s);
  inputs.workload.batch_size = 64;
  inputs.bandwidths.compute_gflops = 200;
  const Plan auto_many = MakePlan(inputs);
  CHECK_FALSE(auto_many.placement.host_computes_experts);
  inputs.workload.moe_experts = MoeExperts::kCpu;
  const Plan forced = MakePlan(inputs);
  CHECK(forced.bound == Bound::kCpuExperts);
  CHECK(forced.predicted_tokens_per_s < auto_many.predicted_tokens_per_s);
}

}  // namespace zinf
