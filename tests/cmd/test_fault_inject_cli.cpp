// I/O fault injection through the binary (`zinf generate --fault-inject`): short reads and -EAGAIN
// are retried into the clean run's exact output; -EIO and a flipped bit stop the run with an error
// naming the layer, keep every finished output, and --resume then completes the job.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {
namespace {

// Six prompts of a fixed length each (--ignore-eos), one at a time: the 9 forward passes of a
// request (prefill, then 8 decode steps) read each streamed extent 9 times.
constexpr int kNumPrompts = 6;

struct FaultRun {
  std::string dir;
  std::string prompts;

  explicit FaultRun(const std::string& name) : dir(MakeTempDir(name)), prompts(dir + "/p.txt") {
    std::string text;
    for (int i = 0; i < kNumPrompts; ++i)
      text += "Tom and his dog number " + std::to_string(i) + "\n";
    WriteFile(prompts, text);
  }

  CliResult Generate(const std::string& out, const std::string& weights,
                     std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"generate",
                                     "--model",
                                     ConvertedStories260KDir(),
                                     "--prompts",
                                     prompts,
                                     "--out",
                                     dir + "/" + out,
                                     "--weights",
                                     weights,
                                     "--batch-size",
                                     "1",
                                     "--max-new-tokens",
                                     "8",
                                     "--ignore-eos",
                                     "--threads",
                                     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunZinf(args);
  }

  std::map<std::string, std::string> Output(const std::string& out) const {
    return LinesById(ReadFile(dir + "/" + out));
  }

  // The clean run's lines, for comparison.
  std::map<std::string, std::string> Clean() const {
    const CliResult clean = Generate("clean.jsonl", "resident");
    INFO(clean.err);
    REQUIRE(clean.exit_code == 0);
    const auto lines = Output("clean.jsonl");
    REQUIRE(lines.size() == kNumPrompts);
    return lines;
  }
};

// Every line of `got` is byte-identical to the clean run's line of the same id.
void CheckAllMatch(const std::map<std::string, std::string>& got,
                   const std::map<std::string, std::string>& clean) {
  for (const auto& [id, line] : got) {
    INFO("id " << id);
    REQUIRE(clean.count(id) == 1);
    CHECK(line == clean.at(id));
  }
}

}  // namespace

TEST_CASE("short reads and -EAGAIN are retried: the output equals a clean run's") {
  const FaultRun run("fault-retry");
  const auto clean = run.Clean();
  for (const char* weights : {"resident", "stream"}) {
    for (const char* spec : {"short", "eagain", "short,eagain"}) {
      INFO(weights << " weights, --fault-inject " << spec);
      const std::string out = std::string(weights) + "-" + spec + ".jsonl";
      const CliResult result = run.Generate(out, weights, {"--fault-inject", spec});
      INFO(result.err);
      REQUIRE(result.exit_code == 0);
      CHECK(result.err.find("fault injection (testing only)") != std::string::npos);
      CHECK(run.Output(out) == clean);
    }
  }
}

TEST_CASE("-EIO stops the run naming the layer, keeps finished outputs, and "
          "--resume completes") {
  const FaultRun run("fault-eio");
  const auto clean = run.Clean();
  SECTION("a streamed layer fails mid-run") {
    // Read 20 of layer.1 is in the third request: two requests are finished by then.
    const CliResult failed =
        run.Generate("o.jsonl", "stream", {"--fault-inject", "eio:layer.1@20"});
    INFO(failed.err);
    CHECK(failed.exit_code != 0);
    // The layer is read in parts (engine/layer_parts.h): the read fails in its first.
    CHECK(failed.err.find("extent layer.1.attention (layer 1)") != std::string::npos);
    CHECK(failed.err.find("Input/output error") != std::string::npos);
    CHECK(failed.err.find("generation stopped after 2 finished requests") != std::string::npos);
    CHECK(failed.err.find("--resume") != std::string::npos);
    const auto kept = run.Output("o.jsonl");
    CHECK(kept.size() == 2);
    CheckAllMatch(kept, clean);

    const CliResult resumed = run.Generate("o.jsonl", "stream", {"--resume"});
    INFO(resumed.err);
    REQUIRE(resumed.exit_code == 0);
    CHECK(run.Output("o.jsonl") == clean);
  }
  SECTION("a resident layer fails while loading, before any request") {
    const CliResult failed = run.Generate("o.jsonl", "resident", {"--fault-inject", "eio:layer.0"});
    INFO(failed.err);
    CHECK(failed.exit_code != 0);
    CHECK(failed.err.find("extent layer.0.attention (layer 0)") != std::string::npos);
    CHECK(failed.err.find("Input/output error") != std::string::npos);
    CHECK(run.Output("o.jsonl").empty());
  }
}

TEST_CASE("a flipped bit is a checksum error naming the layer, never a wrong token") {
  const FaultRun run("fault-flip");
  const auto clean = run.Clean();
  SECTION("streamed: the 30th read of layer.2 carries the flip") {
    const CliResult failed =
        run.Generate("o.jsonl", "stream", {"--fault-inject", "flip:layer.2@30"});
    INFO(failed.err);
    CHECK(failed.exit_code != 0);
    CHECK(failed.err.find("checksum") != std::string::npos);
    CHECK(failed.err.find("layer.2") != std::string::npos);
    CHECK(failed.err.find("tensor '") != std::string::npos);  // a part is checked per tensor
    const auto kept = run.Output("o.jsonl");
    CHECK(kept.size() == 3);
    CheckAllMatch(kept, clean);  // every output written before the flip is the clean one

    const CliResult resumed = run.Generate("o.jsonl", "stream", {"--resume"});
    INFO(resumed.err);
    REQUIRE(resumed.exit_code == 0);
    CHECK(run.Output("o.jsonl") == clean);
  }
  SECTION("resident: the only read of the head carries the flip") {
    const CliResult failed = run.Generate("o.jsonl", "resident", {"--fault-inject", "flip:head"});
    INFO(failed.err);
    CHECK(failed.exit_code != 0);
    CHECK(failed.err.find("checksum") != std::string::npos);
    CHECK(failed.err.find("head") != std::string::npos);
    CHECK(run.Output("o.jsonl").empty());
  }
  SECTION("the user's weights file is never written") {
    const std::string weights = ConvertedStories260KDir() + "/weights.bin";
    const std::string before = ReadFile(weights);
    run.Generate("o2.jsonl", "stream", {"--fault-inject", "flip:layer.0@3"});
    CHECK(ReadFile(weights) == before);
  }
}

TEST_CASE("a bad --fault-inject SPEC is refused, naming the item") {
  const FaultRun run("fault-spec");
  CliResult result = run.Generate("a.jsonl", "stream", {"--fault-inject", "bogus"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("unknown fault 'bogus'") != std::string::npos);
  result = run.Generate("b.jsonl", "stream", {"--fault-inject", "eio:layer.99@2"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("no extent 'layer.99'") != std::string::npos);
  CHECK(result.err.find("layer.0") != std::string::npos);  // the list of extents it has
  result = run.Generate("c.jsonl", "stream", {"--fault-inject", "flip:layer.1@0"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("integer >= 1") != std::string::npos);
}

}  // namespace zinf::testing
