// Crash safety: bench/kill_resume.sh with 10 SIGKILLs at random moments (the bench runs 50). After
// each kill the run resumes; at the end every request must be in the output exactly once, each line
// byte-identical to an uninterrupted greedy run's. Then the same with concurrent runs on one --out.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

// Runs bench/kill_resume.sh with `settings` (VAR=value ...) and checks that it passed; returns its
// report.
std::string RunKillResume(const std::string& name, const std::string& settings) {
  const std::string dir = MakeTempDir(name);
  const std::string log = dir + "/log.txt";
  const std::string command = "ZINF='" + std::string(ZINF_BINARY) + "' " + settings + " WORK='" +
                              dir + "/work' bash '" + ZINF_SOURCE_DIR +
                              "/bench/kill_resume.sh' > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  const std::string output = ReadFile(log);
  INFO(output);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(output.find(": PASS") != std::string::npos);
  return output;
}

}  // namespace

TEST_CASE("generate survives 10 random SIGKILLs with --resume: every request "
          "once, as uninterrupted") {
  // Fewer, shorter requests than the bench so the test takes seconds; the kill moments still fall
  // between 20 and 400 ms, mostly mid-run. SEED makes a failure reproducible.
  RunKillResume("kill-resume", "KILLS=10 PROMPTS=64 SEED=12345");
}

TEST_CASE("20 random rounds of concurrent runs, kills and resumes on one --out: every id once") {
  // Each round starts 1 to 3 runs on the same --out a few ms apart; all but the first must be
  // refused by the lock; the first, and half the others, get a SIGKILL at a random moment.
  const std::string output =
      RunKillResume("kill-resume-concurrent", "KILLS=20 CONCURRENCY=3 PROMPTS=48 SEED=4242");
  INFO(output);
  CHECK(output.find(" 0 refused by the lock") == std::string::npos);  // concurrency was exercised
}

}  // namespace zinf::testing
