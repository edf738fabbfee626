// `zinf plan` plans exactly what `zinf generate` runs: for the same flags, the plan --json writes
// equals the plan generate's --metrics-json reports (placement per extent, batch size, prefetch
// depth, staging, bytes and prediction), whether the planner, --batch-size auto (sized to the
// prompts) or --weights chose.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

TEST_CASE("zinf plan and zinf generate choose the same placement, batch and prefetch depth") {
  const std::string dir = MakeTempDir("cli-plan-vs-generate");
  const std::string prompts = dir + "/prompts.txt";
  WriteFile(prompts, "Once upon a time\nThe sun\nTom was sad.\n");
  const std::vector<std::vector<std::string>> flag_sets = {
      // 2600 KiB: one layer resident, the rest streamed; the planner picks the batch too (with
      // 2 MiB it now streams every layer, one read ahead: verifying checksums makes reading
      // without overlap dearer than the resident layer saves).
      {"--batch-size", "auto", "--max-context", "256", "--cpu-mem", "2600K"},
      {"--batch-size", "2", "--max-context", "256", "--cpu-mem", "2600K", "--kv-dtype", "int8",
       "--micro-batch-tokens", "8"},
      {"--batch-size", "auto", "--max-context", "256", "--cpu-mem", "8M"},  // all resident
      {"--batch-size", "3", "--max-context", "128", "--weights", "stream", "--prefetch-depth", "2"},
  };
  int mixed = 0;
  for (const std::vector<std::string>& flags : flag_sets) {
    std::string shown;
    for (const std::string& flag : flags) shown += " " + flag;
    INFO("flags:" << shown);
    std::vector<std::string> plan_args = {
        "plan",   "--model",          ConvertedStories260KDir(), "--prompts", prompts,
        "--json", dir + "/plan.json", "--max-new-tokens",        "4"};
    plan_args.insert(plan_args.end(), flags.begin(), flags.end());
    const CliResult planned = RunZinf(plan_args);
    INFO(planned.err);
    REQUIRE(planned.exit_code == 0);

    std::vector<std::string> generate_args = {
        "generate", "--model",        ConvertedStories260KDir(), "--prompts",
        prompts,    "--out",          dir + "/out.jsonl",        "--max-new-tokens",
        "4",        "--metrics-json", dir + "/metrics.json"};
    generate_args.insert(generate_args.end(), flags.begin(), flags.end());
    std::remove((dir + "/out.jsonl").c_str());
    const CliResult generated = RunZinf(generate_args);
    INFO(generated.err);
    REQUIRE(generated.exit_code == 0);

    const nlohmann::json plan = nlohmann::json::parse(ReadFile(dir + "/plan.json"));
    const nlohmann::json ran = nlohmann::json::parse(ReadFile(dir + "/metrics.json"))["plan"];
    CHECK(plan["tiers"] == ran["tiers"]);
    CHECK(plan["batch_size"] == ran["batch_size"]);
    CHECK(plan["prefetch_depth"] == ran["prefetch_depth"]);
    CHECK(plan == ran);  // staging, bytes and the prediction too
    const std::vector<std::string> tiers = plan["tiers"];
    if (std::count(tiers.begin(), tiers.end(), "nvme") > 0 &&
        std::count(tiers.begin(), tiers.end(), "device") > 0) {
      ++mixed;
    }
  }
  CHECK(mixed >= 1);  // at least one placement the planner had to split between tiers
}

namespace {

// The "plan: ..." line of a command's output (plan prints it, generate logs it).
std::string PlanLine(const std::string& output) {
  const size_t start = output.find("plan: ");
  if (start == std::string::npos) return "";
  return output.substr(start, output.find('\n', start) - start);
}

}  // namespace

TEST_CASE("zinf plan and zinf generate print the same plan line with their defaults") {
  const std::string dir = MakeTempDir("cli-plan-line");
  const std::string prompts = dir + "/prompts.txt";
  WriteFile(prompts, "Once upon a time\nThe sun\nTom was sad.\nLily\n");
  // No --max-context and no --batch-size: both commands' defaults decide them.
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {}, {"--cpu-mem", "3M"}, {"--batch-size", "2", "--weights", "stream"}}) {
    std::string shown;
    for (const std::string& flag : flags) shown += " " + flag;
    INFO("flags:" << shown);
    std::vector<std::string> plan_args = {"plan",      "--model", ConvertedStories260KDir(),
                                          "--prompts", prompts,   "--max-new-tokens",
                                          "2"};
    plan_args.insert(plan_args.end(), flags.begin(), flags.end());
    const CliResult planned = RunZinf(plan_args);
    INFO(planned.err);
    REQUIRE(planned.exit_code == 0);

    std::vector<std::string> generate_args = {
        "generate", "--model", ConvertedStories260KDir(), "--prompts", prompts,
        "--out",    "-",       "--max-new-tokens",        "2"};
    generate_args.insert(generate_args.end(), flags.begin(), flags.end());
    const CliResult generated = RunZinf(generate_args);
    INFO(generated.err);
    REQUIRE(generated.exit_code == 0);
    CHECK(!PlanLine(planned.out).empty());
    CHECK(PlanLine(planned.out) == PlanLine(generated.err));
  }
}

TEST_CASE("a context beyond the model's training and a --cpu-mem beyond the machine are warned") {
  const std::string dir = MakeTempDir("cli-warnings");
  WriteFile(dir + "/p.txt", "Once upon a time\n");
  const CliResult result =
      RunZinf({"generate", "--model", ConvertedStories260KDir(), "--prompts", dir + "/p.txt",
               "--out", "-", "--max-new-tokens", "2", "--max-context", "1024", "--cpu-mem", "8T"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.find("--max-context 1024 is beyond the 512 positions") != std::string::npos);
  CHECK(result.err.find("--cpu-mem 8.00 TiB is more than this machine's") != std::string::npos);
}

TEST_CASE("generate and plan size the KV cache to the job's longest request, not the model's") {
  // Prompts of 3, 7 and 5 (a text's) tokens with 5 new tokens each, and one of 2 with 20 of its
  // own: the longest needs 22 positions. The first new token of each comes from the prefill step,
  // the others from decode steps, which attend over (4·5.5 + 4·9.5 + 19·12 + 4·7.5) / 31 = 10.3
  // positions on average.
  const std::string dir = MakeTempDir("cli-job-context");
  const std::string prompts = dir + "/prompts.jsonl";
  WriteFile(prompts, "{\"id\": 1, \"prompt_ids\": [1, 403, 404]}\n"
                     "{\"id\": 2, \"prompt_ids\": [1, 403, 404, 405, 406, 407, 408]}\n"
                     "{\"id\": 3, \"prompt_ids\": [1, 403], \"max_new_tokens\": 20}\n"
                     "{\"id\": 4, \"prompt\": \"Once upon a time\"}\n");
  const auto generate = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "generate", "--model", ConvertedStories260KDir(), "--prompts", prompts,
        "--out",    out,       "--max-new-tokens",        "5",         "--ignore-eos"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult result = RunZinf(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return result;
  };
  const CliResult sized = generate(dir + "/sized.jsonl", {});
  CHECK_THAT(sized.err, Catch::Contains("4 requests need up to 22 positions"));
  CHECK_THAT(sized.err, Catch::Contains("attend over 10 on average"));
  CHECK_THAT(sized.err, Catch::Contains("context 22"));
  // Every request runs as in the model's whole context: the same tokens, the same ends (the
  // longest, with --ignore-eos, reaches the sized context's last position).
  const CliResult whole = generate(dir + "/whole.jsonl", {"--max-context", "512"});
  CHECK_THAT(whole.err, Catch::Contains("context 512"));
  const auto results = [&](const std::string& path) {
    std::vector<nlohmann::json> lines;
    for (const std::string& line : Lines(ReadFile(path))) {
      nlohmann::json object = nlohmann::json::parse(line);
      lines.push_back({object["id"], object["token_ids"], object["finish_reason"]});
    }
    return lines;
  };
  CHECK(results(dir + "/sized.jsonl") == results(dir + "/whole.jsonl"));
  CHECK(results(dir + "/sized.jsonl").size() == 4);
  // zinf plan reads the same off the prompts, given generate's --max-new-tokens.
  const CliResult planned = RunZinf({"plan", "--model", ConvertedStories260KDir(), "--prompts",
                                     prompts, "--max-new-tokens", "5"});
  INFO(planned.err);
  REQUIRE(planned.exit_code == 0);
  CHECK_THAT(planned.out, Catch::Contains("4 requests need up to 22 positions"));
  CHECK(PlanLine(planned.out) == PlanLine(sized.err));
}

}  // namespace zinf::testing
