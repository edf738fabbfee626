// End to end: zinf generate --shard over stories260K, each shard in its own process (one resumed
// after losing lines), then zinf merge: byte for byte the file of one uninterrupted greedy run.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {
namespace {

constexpr int kPrompts = 24;

std::vector<std::string> Generate(const std::string& prompts, const std::string& out) {
  return {"generate", "--model", ConvertedStories260KDir(), "--prompts", prompts,
          "--out",    out,       "--max-new-tokens",        "12",        "-q"};
}

std::vector<std::string> With(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("generate --shard K/N then merge equals one run, a resumed shard included") {
  const std::string dir = MakeTempDir("shard-cli");
  const std::string prompts = dir + "/prompts.txt";
  std::string text;
  for (int i = 0; i < kPrompts; ++i) {
    text += fmt::format("Once upon a time {}\n", i);
    if (i % 5 == 0) text += "\n";  // blank lines are not requests: shards stay balanced
  }
  WriteFile(prompts, text);
  const CliResult single = RunZinf(Generate(prompts, dir + "/single.jsonl"));
  REQUIRE(single.exit_code == 0);

  const std::string out = dir + "/r.jsonl";
  for (int shard = 0; shard < 3; ++shard) {
    const CliResult result =
        RunZinf(With(Generate(prompts, out), {"--shard", fmt::format("{}/3", shard)}));
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
  }
  // Shard 1 loses its last two lines (a task killed): merge refuses and names the shard.
  const std::string shard1 = dir + "/r.shard-001-of-003.jsonl";
  const std::vector<std::string> lines = Lines(ReadFile(shard1));
  REQUIRE(lines.size() == kPrompts / 3);
  std::string kept;
  for (size_t i = 0; i + 2 < lines.size(); ++i) kept += lines[i] + "\n";
  WriteFile(shard1, kept);
  const std::string merged = dir + "/merged.jsonl";
  CliResult merge = RunZinf({"merge", dir + "/r.shard-*", "--prompts", prompts, "--out", merged});
  CHECK(merge.exit_code == 1);
  CHECK(merge.err.find("2 of 24 requests are missing (shard 1: 2)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(merged));
  merge = RunZinf({"merge", dir + "/r.shard-*", "--prompts", prompts, "--list-missing"});
  CHECK(merge.exit_code == 0);
  CHECK(merge.out == "1\n");

  // The task resubmitted: its shard comes from Slurm's environment this time.
  setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  setenv("ZINF_SHARD_COUNT", "3", 1);
  const CliResult resumed = RunZinf(With(Generate(prompts, out), {"--resume"}));
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("ZINF_SHARD_COUNT");
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  merge = RunZinf({"merge", dir + "/r.shard-*", "--prompts", prompts, "--out", merged});
  INFO(merge.err);
  REQUIRE(merge.exit_code == 0);
  CHECK(ReadFile(merged) == ReadFile(dir + "/single.jsonl"));

  // Resuming a shard's file as another shard is refused: the shard is part of the run's record.
  const CliResult other = RunZinf(With(Generate(prompts, out), {"--shard", "1/3", "--resume"}));
  CHECK(other.exit_code == 0);  // the same shard: nothing to do
  std::filesystem::copy_file(dir + "/r.shard-000-of-003.jsonl", dir + "/x.jsonl");
  std::filesystem::copy_file(dir + "/r.shard-000-of-003.jsonl.run.json", dir + "/x.jsonl.run.json");
  const CliResult wrong =
      RunZinf(With(Generate(prompts, dir + "/x.jsonl"), {"--shard", "none", "--resume"}));
  CHECK(wrong.exit_code == 1);
}

TEST_CASE("sharding's bad input: each a clear error, nothing overwritten") {
  const std::string dir = MakeTempDir("shard-cli-bad");
  const std::string prompts = dir + "/prompts.txt";
  WriteFile(prompts, "a\nb\n");
  CliResult result = RunZinf(With(Generate(prompts, dir + "/o.jsonl"), {"--shard", "4/4"}));
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("K must be below N") != std::string::npos);
  result = RunZinf(With(Generate(prompts, dir + "/o.jsonl"), {"--shard", "0/0"}));
  CHECK(result.exit_code == 2);
  result =
      RunZinf({"merge", dir + "/nothing-*.jsonl", "--prompts", prompts, "--out", dir + "/m.jsonl"});
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("matches no file") != std::string::npos);
  // --out among the inputs.
  WriteFile(dir + "/m.jsonl", "keep\n");
  result = RunZinf({"merge", dir + "/*.jsonl", "--prompts", prompts, "--out", dir + "/m.jsonl",
                    "--shard-count", "1"});
  CHECK(result.exit_code == 1);
  CHECK(ReadFile(dir + "/m.jsonl") == "keep\n");
}

}  // namespace zinf::testing
