// The random tiny Mixtral and Qwen3-MoE of ../shared/models/tiny-moe against their float64
// reference (greedy ids, each chosen token's logprob within 1e-4), for every placement of the
// experts and several batch shapes: outputs must not depend on either.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <cmath>

#include "cpu/cpu_backend.h"
#include "tests/engine/harness.h"
#include "tests/support/golden_files.h"

namespace zinf::testing {

namespace {

std::string TinyMoeDir(const std::string& name) {
  return std::string(ZINF_SOURCE_DIR) + "/../shared/models/tiny-moe/" + name;
}

struct Case {
  std::string description;
  EngineSettings settings;
};

// CPU placements: every extent in DRAM, every one streamed from the file (several prefetch
// depths), and every other expert kept in DRAM while the rest stream.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (int batch : {1, 4}) {
    Case resident{fmt::format("resident, batch {}", batch), {}};
    resident.settings.batch_size = batch;
    cases.push_back(resident);
  }
  for (int depth : {0, 1, 3}) {
    Case streamed{fmt::format("streamed, prefetch {}, batch 3", depth), {}};
    streamed.settings.placement = io::WeightPlacement::kStreamed;
    streamed.settings.prefetch_depth = depth;
    streamed.settings.batch_size = 3;
    cases.push_back(streamed);
  }
  Case micro{"streamed, micro-batches of 5 rows, steps of 12, batch 4", {}};
  micro.settings.placement = io::WeightPlacement::kStreamed;
  micro.settings.batch_size = 4;
  micro.settings.step_tokens = 12;
  micro.settings.micro_batch_tokens = 5;
  cases.push_back(micro);

  Case partly{"even experts in DRAM, odd ones streamed, batch 2", {}};
  partly.settings.placement = io::WeightPlacement::kStreamed;
  partly.settings.batch_size = 2;
  partly.settings.make_backend = [](const Checkpoint& checkpoint, const ModelLimits&,
                                    Placement& placement) -> std::unique_ptr<Backend> {
    for (size_t e = 0; e < checkpoint.extents.size(); ++e) {
      const ExtentInfo& extent = checkpoint.extents[e];
      // On the CPU backend the device tier is DRAM: read once, kept for the run.
      if (extent.kind == ExtentKind::kExpert && extent.expert % 2 == 0) {
        placement.tiers[e] = Tier::kDevice;
      }
    }
    return std::make_unique<cpu::CpuBackend>(2);
  };
  cases.push_back(partly);

  // --moe-experts cpu's path: the experts a device does not hold computed by a second, host
  // backend from copies of the step's FFN inputs, their outputs copied back and added in expert
  // order. On the CPU the device holds no expert, so the host backend computes every one.
  for (const bool streamed : {false, true}) {
    Case host{fmt::format("experts computed by a host backend, {}, batch 3",
                          streamed ? "streamed" : "resident"),
              {}};
    host.settings.placement =
        streamed ? io::WeightPlacement::kStreamed : io::WeightPlacement::kResident;
    host.settings.batch_size = 3;
    host.settings.make_backend = [](const Checkpoint&, const ModelLimits&,
                                    Placement& placement) -> std::unique_ptr<Backend> {
      placement.host_computes_experts = true;
      return std::make_unique<cpu::CpuBackend>(2);
    };
    cases.push_back(host);
  }
  return cases;
}

void CheckAgainstReference(const std::string& name) {
  const LoadedModel model = ConvertAndLoad(TinyMoeDir(name), "tiny-moe-" + name);
  const std::vector<nlohmann::json> prompts = ReadJsonLines(TinyMoeDir(name) + "/prompts.jsonl");
  const std::vector<nlohmann::json> reference = ReadJsonLines(TinyMoeDir(name) + "/ref.jsonl");
  REQUIRE(prompts.size() == reference.size());
  std::vector<Request> requests;
  for (const nlohmann::json& prompt : prompts) {
    Request request = GreedyRequest(prompt["id"], prompt["prompt_ids"], prompt["max_new_tokens"]);
    request.logprobs = 0;
    requests.push_back(std::move(request));
  }
  for (const Case& c : Cases()) {
    const GenerateResult result = GenerateWithStats(model, requests, c.settings);
    for (size_t i = 0; i < prompts.size(); ++i) {
      INFO(name << ", " << c.description << ", prompt " << prompts[i]["id"]);
      const Completion& completion = result.completions[i];
      CHECK(completion.token_ids == reference[i]["token_ids"].get<std::vector<TokenId>>());
      const std::vector<double> logprobs = reference[i]["logprobs"];
      REQUIRE(completion.logprobs.size() == logprobs.size());
      double max_error = 0;
      for (size_t t = 0; t < logprobs.size(); ++t) {
        max_error =
            std::max(max_error, std::abs(completion.logprobs[t].chosen.logprob - logprobs[t]));
      }
      CHECK(max_error < 1e-4);
    }
    // Whatever the placement, each step ran only the experts its tokens were routed to.
    const ExpertTraffic& traffic = result.expert_traffic;
    CHECK(traffic.steps > 0);
    CHECK(traffic.experts_used < traffic.experts_total);
  }
}

// The same run with every expert on the host backend gives bit-identical logprobs: the split
// changes where experts run, not what each token sums or in which order.
void CheckHostExpertsBitIdentical(const std::string& name) {
  const LoadedModel model = ConvertAndLoad(TinyMoeDir(name), "tiny-moe-host-" + name);
  std::vector<Request> requests;
  for (const nlohmann::json& prompt : ReadJsonLines(TinyMoeDir(name) + "/prompts.jsonl")) {
    Request request = GreedyRequest(prompt["id"], prompt["prompt_ids"], prompt["max_new_tokens"]);
    request.logprobs = 2;
    requests.push_back(std::move(request));
  }
  EngineSettings plain;
  plain.batch_size = 4;
  plain.make_backend = [](const Checkpoint&, const ModelLimits&,
                          Placement&) -> std::unique_ptr<Backend> {
    return std::make_unique<cpu::CpuBackend>(2);
  };
  EngineSettings split = plain;
  split.make_backend = [](const Checkpoint&, const ModelLimits&,
                          Placement& placement) -> std::unique_ptr<Backend> {
    placement.host_computes_experts = true;
    return std::make_unique<cpu::CpuBackend>(2);
  };
  const std::vector<Completion> expected = Generate(model, requests, plain);
  const std::vector<Completion> got = Generate(model, requests, split);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(name << ", request " << i);
    REQUIRE(got[i].logprobs.size() == expected[i].logprobs.size());
    for (size_t t = 0; t < got[i].logprobs.size(); ++t) {
      CHECK(got[i].logprobs[t].chosen.logprob == expected[i].logprobs[t].chosen.logprob);
      for (size_t j = 0; j < got[i].logprobs[t].top.size(); ++j)
        CHECK(got[i].logprobs[t].top[j].logprob == expected[i].logprobs[t].top[j].logprob);
    }
  }
}

}  // namespace

TEST_CASE("tiny Mixtral and Qwen3-MoE: experts on a host backend give bit-identical logprobs") {
  CheckHostExpertsBitIdentical("mixtral");
  CheckHostExpertsBitIdentical("qwen3_moe");
}

TEST_CASE("tiny Mixtral: greedy ids and logprobs equal the float64 reference in every placement") {
  CheckAgainstReference("mixtral");
}

TEST_CASE("tiny Qwen3-MoE (a dense layer among sparse ones): equal to the float64 reference") {
  CheckAgainstReference("qwen3_moe");
}

}  // namespace zinf::testing
