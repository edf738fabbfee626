// Routing and planning of mixture-of-experts models: the host-side router against hand-computed
// cases, and the planner's expert-aware placement and bytes per step on a shipped MoE config.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/expert_routing.h"
#include "engine/planner/planner.h"
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
