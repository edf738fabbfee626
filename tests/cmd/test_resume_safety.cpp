// --resume never mixes runs: a results file records what made it (OUT.run.json, and each line's
// prompt digest), a resume with another model, prompt file or output-changing setting is refused
// saying what differs, and one process at a time writes a results file.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct ResumeRun {
  std::string dir = MakeTempDir("resume-safety");
  std::string out = dir + "/o.jsonl";

  CliResult Generate(const std::string& model, const std::string& prompts,
                     std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {
        "generate", "--model", model, "--prompts", prompts, "--out", out, "--max-new-tokens", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunZinf(args);
  }
};

}  // namespace

TEST_CASE("--resume refuses another model, prompt file or output-changing setting") {
  const ResumeRun run;
  const std::string prompts = run.dir + "/p.txt";
  WriteFile(prompts, "Once upon a time\nThe sun\nTom was sad.\n");
  const std::string model = ConvertedStories260KDir();
  const CliResult first = run.Generate(model, prompts);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const std::string finished = ReadFile(run.out);
  REQUIRE(Lines(finished).size() == 3);
  REQUIRE(std::filesystem::exists(run.out + ".run.json"));

  SECTION("another model") {
    const std::string int8 = run.dir + "/int8.zinf";
    REQUIRE(RunZinf({"convert", std::string(ZINF_SOURCE_DIR) + "/models/stories260K", int8,
                     "--dtype", "int8"})
                .exit_code == 0);
    const CliResult resumed = run.Generate(int8, prompts, {"--resume"});
    CHECK(resumed.exit_code == 1);
    CHECK(Contains(resumed.err, "model: "));
    CHECK(Contains(resumed.err, int8));
  }
  SECTION("another prompt file with the same ids (a text file's line numbers)") {
    const std::string other = run.dir + "/other.txt";
    WriteFile(other, "A dog\nA cat\nA bird\n");
    const CliResult resumed = run.Generate(model, other, {"--resume"});
    CHECK(resumed.exit_code == 1);
    CHECK(Contains(resumed.err, "3 requests whose results are in " + run.out + " have changed"));
  }
  SECTION("another prompt file with other ids") {
    const std::string other = run.dir + "/other.jsonl";
    WriteFile(other, "{\"id\": \"a\", \"prompt\": \"A dog\"}\n");
    const CliResult resumed = run.Generate(model, other, {"--resume"});
    CHECK(resumed.exit_code == 1);
    CHECK(Contains(resumed.err, "3 results in " + run.out + " have ids that"));
  }
  SECTION("settings that change outputs, each named as its flag") {
    for (const auto& [flag, value] :
         std::vector<std::pair<std::string, std::string>>{{"--temperature", "0.7"},
                                                          {"--logprobs", "2"},
             {"--repetition-penalty", "1.2"},
                                                          {"--top-k", "3"},
                                                          {"--stop", "x"},
                                                          {"--kv-dtype", "int8"},
                                                          {"--seed", "9"}}) {
      INFO(flag);
      const CliResult resumed = run.Generate(model, prompts, {"--resume", flag, value});
      CHECK(resumed.exit_code == 1);
      CHECK(Contains(resumed.err, flag + ": "));
    }
  }
  SECTION("a missing record of the run") {
    std::filesystem::remove(run.out + ".run.json");
    const CliResult resumed = run.Generate(model, prompts, {"--resume"});
    CHECK(resumed.exit_code == 1);
    CHECK(Contains(resumed.err, ".run.json is missing"));
  }
  // Whatever was refused, nothing was written.
  CHECK(ReadFile(run.out) == finished);

  SECTION("what leaves outputs alone is allowed: batch size, placement, prompts added") {
    WriteFile(prompts, "Once upon a time\nThe sun\nTom was sad.\nA new prompt\n");
    const CliResult resumed =
        run.Generate(model, prompts, {"--resume", "--batch-size", "1", "--weights", "stream"});
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    CHECK(LinesById(ReadFile(run.out)).size() == 4);
  }
  SECTION("--resume-force mixes them, saying what differs") {
    const CliResult resumed =
        run.Generate(model, prompts, {"--resume-force", "--temperature", "0.7"});
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    CHECK(Contains(resumed.err, "--temperature: 0.0 → 0.7"));
  }
}

TEST_CASE("a second writer on one --out fails at once, before loading anything") {
  const ResumeRun run;
  WriteFile(run.dir + "/p.txt", "Once upon a time\n");
  // This process plays the first writer: it holds the lock a running zinf holds.
  const int fd = ::open(run.out.c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--resume"},
                                                std::vector<std::string>{}}) {
    // A model path that does not exist: the lock must be refused before the model is read.
    const CliResult second = run.Generate(run.dir + "/no-such-model", run.dir + "/p.txt", extra);
    CHECK(second.exit_code == 1);
    CHECK(Contains(second.err, "being written by another zinf process"));
  }
  ::close(fd);
  const CliResult after = run.Generate(ConvertedStories260KDir(), run.dir + "/p.txt");
  INFO(after.err);
  CHECK(after.exit_code == 0);
}

TEST_CASE("a file where half the requests fail exits 3, logging each kind of failure once") {
  const ResumeRun run;
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "the cat sat on the mat. ";
  std::string prompts;
  for (int i = 0; i < 6; ++i) prompts += (i % 2 == 0 ? "Once upon a time" : long_prompt) + "\n";
  WriteFile(run.dir + "/p.txt", prompts);
  const CliResult result = run.Generate(ConvertedStories260KDir(), run.dir + "/p.txt");
  INFO(result.err);
  CHECK(result.exit_code == 3);
  CHECK(LinesById(ReadFile(run.out)).size() == 6);
  size_t logged = 0;
  for (size_t at = 0; (at = result.err.find(") failed: ", at)) != std::string::npos; ++at) ++logged;
  CHECK(logged == 1);
  CHECK(Contains(result.err, "3 requests failed like this"));
  // Resuming a finished file with failed requests in it keeps telling so.
  const CliResult resumed =
      run.Generate(ConvertedStories260KDir(), run.dir + "/p.txt", {"--resume"});
  CHECK(resumed.exit_code == 3);
  CHECK(Contains(resumed.err, "nothing to do"));
}

}  // namespace zinf::testing
