// Mixture-of-experts models end to end through the CLI: convert --synthetic of a small MoE config,
// generate streamed from the file, and the run summary's expert traffic; plan on the shipped
// MoE configs.
#include <catch2/catch.hpp>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

constexpr const char* kTinyMixtral = R"({
  "model_type": "mixtral", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 96,
  "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 128, "num_local_experts": 8, "num_experts_per_tok": 2,
  "bos_token_id": 1, "eos_token_id": 2
})";

}  // namespace

TEST_CASE("a streamed MoE run reports the expert bytes it moved against moving them all") {
  const std::string dir = MakeTempDir("moe-cli");
  WriteFile(dir + "/config.json", kTinyMixtral);
  const CliResult converted =
      RunZinf({"convert", "--synthetic", dir + "/config.json", dir + "/zinf", "-q"});
  INFO(converted.err);
  REQUIRE(converted.exit_code == 0);
  WriteFile(dir + "/p.jsonl", R"({"id": 0, "prompt_ids": [1, 403, 407], "max_new_tokens": 6})"
                              "\n");
  const CliResult run = RunZinf({"generate", "--model", dir + "/zinf", "--prompts",
                                 dir + "/p.jsonl", "--out", dir + "/o.jsonl", "--weights", "stream",
                                 "--batch-size", "1", "--metrics-json", dir + "/m.json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::Matchers::Contains("experts:") &&
                          Catch::Matchers::Contains("moved per step against"));
  const nlohmann::json metrics = nlohmann::json::parse(ReadFile(dir + "/m.json"));
  const nlohmann::json& experts = metrics["experts"];
  // One token per decode step routes to 2 of 8 experts; the prefill step's 3 tokens to at most 6.
  CHECK(experts["used"].get<double>() / experts["total"].get<double>() < 0.35);
  CHECK(experts["bytes_moved"].get<double>() < 0.35 * experts["bytes_if_all_moved"].get<double>());
}

TEST_CASE("zinf plan works for every shipped MoE config, CPU and CUDA") {
  for (const char* name : {"mixtral-8x7b", "mixtral-8x22b", "qwen1.5-moe-a2.7b", "qwen2-57b-a14b",
                           "qwen3-30b-a3b", "qwen3-235b-a22b"}) {
    INFO(name);
    const std::string config = std::string(ZINF_SOURCE_DIR) + "/configs/" + name + ".json";
    const CliResult cpu = RunZinf({"plan", "--config", config, "--dtype", "int4", "--cpu-mem",
                                   "512G", "--batch-size", "4", "--max-context", "1024"});
    INFO(cpu.err);
    CHECK(cpu.exit_code == 0);
    CHECK_THAT(cpu.out,
               Catch::Matchers::Contains("experts ") && Catch::Matchers::Contains("per token"));
    const CliResult cuda =
        RunZinf({"plan", "--config", config, "--dtype", "int4", "--device", "cuda", "--gpu-mem",
                 "24G", "--cpu-mem", "512G", "--batch-size", "16", "--max-context", "1024"});
    INFO(cuda.err);
    CHECK(cuda.exit_code == 0);
    CHECK_THAT(cuda.out, Catch::Matchers::Contains("predicted"));
  }
}

}  // namespace zinf::testing

namespace zinf::testing {

TEST_CASE(
    "generate --save-routing records every token's experts; --routing-profile plans with it") {
  const std::string dir = MakeTempDir("moe-routing");
  WriteFile(dir + "/config.json", kTinyMixtral);
  REQUIRE(
      RunZinf({"convert", "--synthetic", dir + "/config.json", dir + "/zinf", "-q"}).exit_code ==
      0);
  WriteFile(dir + "/p.jsonl", R"({"id": 0, "prompt_ids": [1, 403, 407], "max_new_tokens": 5})"
                              "\n"
                              R"({"id": 1, "prompt_ids": [1, 9], "max_new_tokens": 4})"
                              "\n");
  const std::string profile = dir + "/routing.json";
  const CliResult run =
      RunZinf({"generate", "--model", dir + "/zinf", "--prompts", dir + "/p.jsonl", "--out",
               dir + "/o.jsonl", "--batch-size", "2", "--save-routing", profile});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const nlohmann::json json = nlohmann::json::parse(ReadFile(profile));
  REQUIRE(json["layers"].size() == 3);
  for (const nlohmann::json& layer : json["layers"]) {
    // Every token the model ran (prompts, then each generated token but the last) went to 2 of 8.
    CHECK(layer["tokens"].get<uint64_t>() == (3 + 4) + (2 + 3));
    uint64_t routed = 0;
    for (uint64_t count : layer["counts"]) routed += count;
    CHECK(routed == 2 * layer["tokens"].get<uint64_t>());
  }

  const CliResult plan = RunZinf({"plan", "--model", dir + "/zinf", "--routing-profile", profile,
                                  "--batch-size", "1", "--cpu-mem", "64M"});
  INFO(plan.err);
  CHECK(plan.exit_code == 0);
  CHECK_THAT(plan.out, Catch::Matchers::Contains("from --routing-profile"));

  // A profile of another shape of model is refused, naming the file and the mismatch.
  nlohmann::json wrong = json;
  wrong["num_experts"] = 4;
  WriteFile(dir + "/wrong.json", wrong.dump());
  const CliResult refused = RunZinf({"plan", "--model", dir + "/zinf", "--routing-profile",
                                     dir + "/wrong.json", "--batch-size", "1"});
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err,
             Catch::Matchers::Contains("wrong.json") && Catch::Matchers::Contains("4 experts"));
  // Counts that do not add up to k per token are refused too.
  nlohmann::json short_counts = json;
  short_counts["layers"][0]["counts"][0] = short_counts["layers"][0]["counts"][0].get<int>() + 1;
  WriteFile(dir + "/short.json", short_counts.dump());
  const CliResult uneven =
      RunZinf({"generate", "--model", dir + "/zinf", "--prompts", dir + "/p.jsonl", "--out",
               dir + "/o2.jsonl", "--routing-profile", dir + "/short.json"});
  CHECK(uneven.exit_code != 0);
  CHECK_THAT(uneven.err,
             Catch::Matchers::Contains("short.json") && Catch::Matchers::Contains("layer 0"));
}

}  // namespace zinf::testing

namespace zinf::testing {

TEST_CASE("--moe-experts: where a GPU run computes its off-device experts; refused elsewhere") {
  const std::string configs = std::string(ZINF_SOURCE_DIR) + "/configs";
  const std::vector<std::string> common = {"plan",
                                           "--config",
                                           configs + "/mixtral-8x7b.json",
                                           "--dtype",
                                           "int4",
                                           "--device",
                                           "cuda",
                                           "--gpu-mem",
                                           "16G",
                                           "--cpu-mem",
                                           "128G",
                                           "--batch-size",
                                           "1",
                                           "--max-context",
                                           "1024",
                                           "--pcie-gbps",
                                           "25",
                                           "--dram-gbps",
                                           "100"};
  std::vector<std::string> on_cpu = common, on_gpu = common, bad = common;
  on_cpu.insert(on_cpu.end(), {"--moe-experts", "cpu"});
  on_gpu.insert(on_gpu.end(), {"--moe-experts", "gpu"});
  bad.insert(bad.end(), {"--moe-experts", "disk"});
  const CliResult cpu = RunZinf(on_cpu);
  INFO(cpu.err);
  REQUIRE(cpu.exit_code == 0);
  CHECK_THAT(cpu.out, Catch::Matchers::Contains("computed by the CPU"));
  const CliResult gpu = RunZinf(on_gpu);
  INFO(gpu.err);
  REQUIRE(gpu.exit_code == 0);
  CHECK_THAT(gpu.out, !Catch::Matchers::Contains("computed by the CPU"));
  const CliResult refused = RunZinf(bad);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Matchers::Contains("--moe-experts: 'disk'"));

  const CliResult on_cpu_device =
      RunZinf({"plan", "--config", configs + "/mixtral-8x7b.json", "--dtype", "int4", "--cpu-mem",
               "512G", "--moe-experts", "cpu"});
  CHECK(on_cpu_device.exit_code != 0);
  CHECK_THAT(on_cpu_device.err, Catch::Matchers::Contains("--device cpu"));
  const CliResult dense =
      RunZinf({"plan", "--config", configs + "/llama-2-7b.json", "--device", "cuda", "--gpu-mem",
               "8G", "--cpu-mem", "64G", "--moe-experts", "gpu"});
  CHECK(dense.exit_code != 0);
  CHECK_THAT(dense.err, Catch::Matchers::Contains("has no experts"));
}

}  // namespace zinf::testing
