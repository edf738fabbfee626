// Tests for cmd/shard_merge (zinf merge's check and join) and cmd/shard (which requests a shard
// holds, where a task's shard comes from, its output name), on shard files written by hand.
#include <fmt/format.h>
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cmd/prompt_file.h"
#include "cmd/shard.h"
#include "cmd/shard_merge.h"
#include "engine/error.h"
#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::cli {
namespace {

using testing::ReadFile;
using testing::WriteFile;

constexpr int kPrompts = 10;
constexpr int kShards = 3;

std::string PromptLine(int line) { return fmt::format("prompt number {}", line); }

// A result line as generate writes it for line `line` of a prompt file whose lines are `prompt`.
std::string ResultLine(int line, const std::string& prompt) {
  return fmt::format(R"({{"id":{},"text":" t{}","finish_reason":"length","line":{},)"
                     R"("prompt_digest":"{:016x}"}})",
                     line, line, line, XXH3_64bits(prompt.data(), prompt.size()));
}

// A job of kShards shards over kPrompts text prompts, written as generate would; each test
// then breaks it in one way.
struct Job {
  std::string dir = testing::MakeTempDir("shard-merge");
  std::string prompts = dir + "/prompts.txt";
  std::map<int, std::vector<std::string>> lines;  // shard -> its result lines

  Job() {
    std::string text;
    for (int line = 1; line <= kPrompts; ++line) {
      text += PromptLine(line) + "\n";
      // Lines are ids; request i (0-based) is line i + 1. Finished out of order, as a batch does.
      lines[(line - 1) % kShards].insert(lines[(line - 1) % kShards].begin(),
                                         ResultLine(line, PromptLine(line)));
    }
    WriteFile(prompts, text);
  }
  std::string File(int shard) const {
    return fmt::format("{}/r.shard-{:03}-of-003.jsonl", dir, shard);
  }
  std::vector<std::string> Write(const std::string& run_digest = "aa") const {
    std::vector<std::string> files;
    for (const auto& [shard, shard_lines] : lines) {
      std::string text;
      for (const std::string& line : shard_lines) text += line + "\n";
      WriteFile(File(shard), text);
      WriteFile(File(shard) + ".run.json",
                fmt::format(R"({{"model":{{"digest":"{}","path":"m"}},"prompts":{{"path":"p"}},)"
                            R"("settings":{{"max-new-tokens":8,"shard":"{}/{}"}}}})",
                            run_digest, shard, kShards));
      files.push_back(File(shard));
    }
    return files;
  }
  MergeInputs Inputs(std::vector<std::string> files) const {
    MergeInputs inputs;
    inputs.shard_files = std::move(files);
    inputs.prompts = prompts;
    return inputs;
  }
};

std::string Joined(const std::vector<std::string>& examples) {
  std::string text;
  for (const std::string& example : examples) text += example + "\n";
  return text;
}

}  // namespace

TEST_CASE("merge: complete shards join in prompt-file order, byte for byte") {
  Job job;
  ShardMerge merge(job.Inputs(job.Write()));
  const MergeFindings& found = merge.Check();
  INFO(Joined(found.examples));
  REQUIRE(found.complete());
  CHECK(found.requests == kPrompts);
  CHECK(found.shard_count == kShards);
  CHECK(found.MissingShardList().empty());
  const std::string out = job.dir + "/merged.jsonl";
  merge.Write(out);
  std::string expected;
  for (int line = 1; line <= kPrompts; ++line)
    expected += ResultLine(line, PromptLine(line)) + "\n";
  CHECK(ReadFile(out) == expected);
}

TEST_CASE("merge: missing requests are named with their shards, and nothing is written") {
  Job job;
  job.lines[1].erase(job.lines[1].begin());  // shard 1 loses one result (line 8)
  std::vector<std::string> files = job.Write();
  std::filesystem::remove(files[2]);  // shard 2 never ran
  files.pop_back();
  ShardMerge merge(job.Inputs(files));
  const MergeFindings& found = merge.Check();
  CHECK_FALSE(found.complete());
  CHECK(found.missing == 1 + 3);  // one of shard 1, all three of shard 2
  CHECK(found.duplicated == 0);
  CHECK(found.foreign == 0);
  CHECK(found.MissingShardList() == "1,2");
  CHECK(found.missing_by_shard.at(2) == 3);
  CHECK_THROWS(merge.Write(job.dir + "/merged.jsonl"));
  CHECK_FALSE(std::filesystem::exists(job.dir + "/merged.jsonl"));
}

TEST_CASE("merge: an id in two shard files is a duplicate, named with both files") {
  Job job;
  job.lines[2].push_back(ResultLine(1, PromptLine(1)));  // request 0 belongs to shard 0
  ShardMerge merge(job.Inputs(job.Write()));
  const MergeFindings& found = merge.Check();
  CHECK(found.duplicated == 1);
  CHECK(found.missing == 0);
  REQUIRE(found.examples.size() == 1);
  CHECK(found.examples[0].find("duplicated: id 1") != std::string::npos);
  CHECK(found.examples[0].find(job.File(0)) != std::string::npos);
  CHECK(found.examples[0].find(job.File(2)) != std::string::npos);
}

TEST_CASE("merge: shards of another prompt file are foreign") {
  Job job;
  const std::vector<std::string> files = job.Write();
  SECTION("the prompt file changed: every digest differs") {
    std::string other;
    for (int line = 1; line <= kPrompts; ++line) other += "another " + PromptLine(line) + "\n";
    WriteFile(job.prompts, other);
    ShardMerge merge(job.Inputs(files));
    const MergeFindings& found = merge.Check();
    CHECK(found.foreign == kPrompts);
    CHECK(Joined(found.examples).find("answers another prompt") != std::string::npos);
  }
  SECTION("a result whose id the prompt file lacks") {
    WriteFile(job.File(1), ReadFile(job.File(1)) + ResultLine(99, "prompt 99") + "\n");
    ShardMerge merge(job.Inputs(files));
    const MergeFindings& found = merge.Check();
    CHECK(found.foreign == 1);
    CHECK(Joined(found.examples).find("id 99 in") != std::string::npos);
  }
  SECTION("a request in the file of another shard") {
    WriteFile(job.File(0), ReadFile(job.File(0)) + ReadFile(job.File(1)));
    std::filesystem::remove(job.File(1));
    ShardMerge merge(job.Inputs({files[0], files[2]}));
    const MergeFindings& found = merge.Check();
    CHECK(found.foreign == 3);
    CHECK(found.missing == 0);
    CHECK(Joined(found.examples).find("belongs to shard 1") != std::string::npos);
  }
  SECTION("another model's run") {
    WriteFile(
        job.File(2) + ".run.json",
        R"({"model":{"digest":"bb","path":"m"},"settings":{"max-new-tokens":8,"shard":"2/3"}})");
    CHECK_THROWS_WITH(ShardMerge(job.Inputs(files)), Catch::Contains("made by different runs"));
  }
  SECTION("another shard count") {
    WriteFile(
        job.File(2) + ".run.json",
        R"({"model":{"digest":"aa","path":"m"},"settings":{"max-new-tokens":8,"shard":"2/4"}})");
    CHECK_THROWS_WITH(ShardMerge(job.Inputs(files)), Catch::Contains("not one of 3 shards"));
  }
}

TEST_CASE("merge: OpenAI Batch shards match by custom_id and the digest in their id") {
  const std::string dir = testing::MakeTempDir("shard-merge-batch");
  std::string prompts;
  std::vector<std::string> requests;
  for (int i = 0; i < 4; ++i) {
    requests.push_back(fmt::format(R"({{"custom_id": "c{}", "method": "POST", "url": )"
                                   R"("/v1/completions", "body": {{"prompt": "p{}"}}}})",
                                   i, i));
    prompts += requests.back() + "\n";
  }
  WriteFile(dir + "/p.jsonl", prompts);
  const auto result = [&](int i, const std::string& request) {
    return fmt::format(R"({{"id":"batch_req_{:016x}","custom_id":"c{}","response":null,)"
                       R"("error":{{"code":"x","message":"y"}}}})",
                       XXH3_64bits(request.data(), request.size()), i);
  };
  // Error lines count as present. Shards 0 and 1 of 2: requests 0, 2 and 1, 3.
  WriteFile(dir + "/a.jsonl", result(2, requests[2]) + "\n" + result(0, requests[0]) + "\n");
  WriteFile(dir + "/b.jsonl", result(1, requests[1]) + "\n" + result(3, "another request") + "\n");
  MergeInputs inputs;
  inputs.shard_files = {dir + "/a.jsonl", dir + "/b.jsonl"};
  inputs.prompts = dir + "/p.jsonl";
  inputs.shard_count = 2;
  ShardMerge merge(inputs);
  const MergeFindings& found = merge.Check();
  CHECK(found.foreign == 1);
  CHECK(found.missing == 0);
  REQUIRE(found.examples.size() == 1);
  CHECK(found.examples[0].find("id c3 in " + dir + "/b.jsonl answers another prompt") !=
        std::string::npos);
}

TEST_CASE("merge: a torn final line counts as missing; a damaged line names its file and line") {
  Job job;
  const std::vector<std::string> files = job.Write();
  const std::string text = ReadFile(job.File(1));
  WriteFile(job.File(1), text.substr(0, text.size() - 5));  // the last line cut mid-write
  {
    ShardMerge merge(job.Inputs(files));
    CHECK(merge.Check().missing == 1);
  }
  WriteFile(job.File(1), "not json\n" + text);
  CHECK_THROWS_WITH(ShardMerge(job.Inputs(files)),
                    Catch::Contains(job.File(1) + ":1: not valid JSON"));
}

TEST_CASE("shards: K/N parsing, membership by request ordinal, output names") {
  CHECK(ParseShard("3/8") == Shard{3, 8});
  CHECK_THROWS_WITH(ParseShard("4/4"), Catch::Contains("K must be below N"));
  CHECK_THROWS_WITH(ParseShard("0/0"), Catch::Contains("N must be >= 1"));
  CHECK_THROWS(ParseShard("3"));
  CHECK_THROWS(ParseShard("-1/4"));
  CHECK_THROWS(ParseShard("1/x"));
  CHECK(ShardOutputPath("out/results.jsonl", {3, 8}) == "out/results.shard-003-of-008.jsonl");
  CHECK(ShardOutputPath("results", {3, 8}) == "results.shard-003-of-008");
  CHECK(ShardOutputPath("r-{shard}.out", {12, 1000}) == "r-shard-0012-of-1000.out");
  CHECK(ShardOutputPath("-", {1, 2}) == "-");

  // Blank lines are not requests: the ordinal counts request lines only, bad ones included.
  PromptFileOptions options;
  options.shard = Shard{1, 2};
  const std::vector<PromptEntry> entries =
      ParsePrompts("a\n\nb\nc\n\n\nd\ne\n", "p.txt", PromptFileFormat::kText, options);
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].id == "3");  // b: request 1
  CHECK(entries[1].id == "7");  // d: request 3
  CHECK(entries[1].request_idx == 3);
}

TEST_CASE("shards from the scheduler's environment") {
  std::map<std::string, std::string> env;
  const auto resolve = [&](std::string flag = "", std::optional<int64_t> count = std::nullopt) {
    return ResolveShard({flag, count, [&](const char* name) -> const char* {
                           const auto it = env.find(name);
                           return it == env.end() ? nullptr : it->second.c_str();
                         }});
  };
  CHECK_FALSE(resolve().has_value());
  env = {{"SLURM_ARRAY_TASK_ID", "5"},
         {"SLURM_ARRAY_TASK_MIN", "3"},
         {"SLURM_ARRAY_TASK_MAX", "6"},
         {"SLURM_ARRAY_TASK_COUNT", "4"}};
  CHECK(resolve() == Shard{2, 4});       // --array=3-6: numbered from its first index
  CHECK(resolve("1/2") == Shard{1, 2});  // the flag wins
  CHECK_FALSE(resolve("none").has_value());
  env = {{"SLURM_ARRAY_TASK_ID", "17"},
         {"SLURM_ARRAY_TASK_MIN", "3"},
         {"SLURM_ARRAY_TASK_MAX", "17"},
         {"SLURM_ARRAY_TASK_COUNT", "2"}};
  CHECK_THROWS_WITH(resolve(), Catch::Contains("--shard-count"));  // a resubmission of 3,17
  CHECK(resolve("", 32) == Shard{17, 32});  // with a count, indices are shard numbers
  env["ZINF_SHARD_COUNT"] = "32";
  CHECK(resolve() == Shard{17, 32});
  CHECK_THROWS_WITH(resolve("", 8), Catch::Contains("not one of the 8 shards"));
  env = {{"JOB_COMPLETION_INDEX", "2"}};
  CHECK_THROWS_WITH(resolve(), Catch::Contains("needs the number of shards"));
  CHECK(resolve("", 4) == Shard{2, 4});
  env = {{"JOB_COMPLETION_INDEX", "x"}};
  CHECK_THROWS_WITH(resolve("", 4), Catch::Contains("JOB_COMPLETION_INDEX='x'"));
}

}  // namespace zinf::cli
