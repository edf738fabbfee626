// Resource limits through the binary: a full disk or a file-size limit mid-run, a read-only output
// directory, a 1 MB prompt, and a prompt file that turns malformed while it is being streamed. Each
// ends in a clear error (or a per-request error) with every finished output kept.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {
namespace {

std::vector<std::string> GenerateArgs(const std::string& prompts, const std::string& out,
                                      std::vector<std::string> extra = {},
                                      const std::string& max_new_tokens = "8") {
  std::vector<std::string> args = {"generate",
                                   "--model",
                                   ConvertedStories260KDir(),
                                   "--prompts",
                                   prompts,
                                   "--out",
                                   out,
                                   "--max-new-tokens",
                                   max_new_tokens,
                                   "--batch-size",
                                   "1",
                                   "--threads",
                                   "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string FivePrompts(const std::string& dir) {
  const std::string path = dir + "/p.txt";
  WriteFile(path, "Once upon a time\nThe sun\nTom was sad.\nLily had a red "
                  "ball\nThe dog ran\n");
  return path;
}

}  // namespace

TEST_CASE("a full disk is a clear error naming the output file") {
  if (!std::filesystem::exists("/dev/full")) {
    WARN("no /dev/full here; skipped");
    return;
  }
  const std::string dir = MakeTempDir("limits-full");
  const CliResult result = RunZinf(GenerateArgs(FivePrompts(dir), "/dev/full"));
  INFO(result.err);
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("cannot write to output file /dev/full") != std::string::npos);
  CHECK(result.err.find(std::strerror(ENOSPC)) != std::string::npos);
}

TEST_CASE("a file-size limit mid-run keeps every finished line whole, and "
          "--resume completes") {
  const std::string dir = MakeTempDir("limits-fsize");
  const std::string prompts = FivePrompts(dir);
  // 40 tokens a request: two result lines outweigh the run's record (o.jsonl.run.json, written
  // before any result), so the limit falls on the results file.
  const CliResult clean = RunZinf(GenerateArgs(prompts, dir + "/clean.jsonl", {}, "40"));
  REQUIRE(clean.exit_code == 0);
  const std::vector<std::string> clean_lines = Lines(ReadFile(dir + "/clean.jsonl"));
  REQUIRE(clean_lines.size() == 5);

  // Room for two lines and part of the third: the third write is cut short by the limit, then fails
  // with EFBIG (SIGXFSZ ignored), as a write fails with ENOSPC when a disk fills up.
  const rlim_t limit_bytes = clean_lines[0].size() + clean_lines[1].size() + 2 + 40;
  const std::string out = dir + "/o.jsonl";
  const CliResult failed = RunZinf(GenerateArgs(prompts, out, {}, "40"), "", [limit_bytes] {
    const rlimit limit{limit_bytes, limit_bytes};
    setrlimit(RLIMIT_FSIZE, &limit);
    std::signal(SIGXFSZ, SIG_IGN);
  });
  INFO(failed.err);
  CHECK(failed.exit_code != 0);
  CHECK(failed.err.find("cannot write to output file " + out) != std::string::npos);
  CHECK(failed.err.find(std::strerror(EFBIG)) != std::string::npos);
  CHECK(failed.err.find("the 2 results written by this run before it are intact") !=
        std::string::npos);
  // The partly written third line was cut back off: the file is exactly the first two lines.
  CHECK(ReadFile(out) == clean_lines[0] + "\n" + clean_lines[1] + "\n");

  const CliResult resumed = RunZinf(GenerateArgs(prompts, out, {"--resume"}, "40"));
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(LinesById(ReadFile(out)) == LinesById(ReadFile(dir + "/clean.jsonl")));
}

TEST_CASE("a read-only output directory fails before the model is even read") {
  const std::string dir = MakeTempDir("limits-readonly");
  std::string out_dir = dir + "/readonly";
  std::filesystem::create_directory(out_dir);
  chmod(out_dir.c_str(), 0555);
  if (::access(out_dir.c_str(), W_OK) == 0) {
    // Root ignores directory permissions; sysfs refuses new files even to root.
    out_dir = "/sys";
    if (::access("/sys/kernel", F_OK) != 0) {
      WARN("running as root without /sys: no unwritable directory to test "
           "with; skipped");
      return;
    }
  }
  const std::string out = out_dir + "/o.jsonl";
  // The model directory does not exist: an error about the output proves it is checked first.
  CliResult result = RunZinf(
      {"generate", "--model", dir + "/no-such-model", "--prompts", FivePrompts(dir), "--out", out});
  INFO(result.err);
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("cannot open output file " + out) != std::string::npos);
  CHECK(result.err.find("no-such-model") == std::string::npos);
  chmod((dir + "/readonly").c_str(), 0755);
}

TEST_CASE("a 1 MB prompt fails alone, quickly, with a clear message; the "
          "others run") {
  const std::string dir = MakeTempDir("limits-1mb");
  std::string huge;
  while (huge.size() < (1u << 20)) huge += "the cat sat on the mat. ";
  const nlohmann::json huge_line = {{"id", "huge"}, {"prompt", huge}};
  WriteFile(dir + "/small.jsonl", "{\"id\": \"a\", \"prompt\": \"Once upon a time\"}\n"
                                  "{\"id\": \"b\", \"prompt\": \"The sun\"}\n");
  WriteFile(dir + "/p.jsonl", ReadFile(dir + "/small.jsonl") + huge_line.dump() + "\n");
  const CliResult small = RunZinf(GenerateArgs(dir + "/small.jsonl", dir + "/small-out.jsonl"));
  REQUIRE(small.exit_code == 0);

  const auto start = std::chrono::steady_clock::now();
  const CliResult result = RunZinf(GenerateArgs(dir + "/p.jsonl", dir + "/o.jsonl"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(result.err);
  REQUIRE(result.exit_code == 3);  // finished, with a request failed (cmd/exit_codes.h)
  auto lines = LinesById(ReadFile(dir + "/o.jsonl"));
  REQUIRE(lines.size() == 3);
  const nlohmann::json failed = nlohmann::json::parse(lines.at("huge"));
  CHECK(failed["finish_reason"] == "error");
  CHECK_THAT(failed["error"].get<std::string>(), Catch::Contains("context"));
  lines.erase("huge");
  CHECK(lines == LinesById(ReadFile(dir + "/small-out.jsonl")));
  WARN("a run with a 1 MiB prompt took " << seconds << " s");
  CHECK(seconds < 30);  // tokenizing 1 MiB takes well under a second: this catches O(n^2)
}

TEST_CASE("a line that turns malformed mid-run: in-flight requests finish, "
          "then a clear error") {
  // The prompt file is checked before any work, then streamed; a line appended meanwhile is only
  // seen by the stream. The run takes no more requests, finishes those in flight, writes them, and
  // fails naming the line; after the line is fixed, --resume completes the job.
  const std::string dir = MakeTempDir("limits-midrun");
  std::string prompts;
  for (int i = 1; i <= 20; ++i) {
    prompts += "{\"id\": \"r" + std::to_string(i) + "\", \"prompt\": \"Story " + std::to_string(i) +
               " begins\"}\n";
  }
  const std::string path = dir + "/p.jsonl";
  WriteFile(path, prompts);
  const std::string out = dir + "/o.jsonl";
  const std::vector<std::string> args =
      GenerateArgs(path, out, {"--ignore-eos", "--weights", "stream"}, "60");

  const pid_t pid = fork();
  if (pid == 0) {
    const int err = open((dir + "/err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, 2);
    std::vector<std::string> copies = args;
    std::vector<char*> argv = {const_cast<char*>(ZINF_BINARY)};
    for (std::string& arg : copies) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(ZINF_BINARY, argv.data());
    _exit(127);
  }
  // Two minutes at most, for a loaded CI machine; the loop ends at the first output line.
  for (int waited = 0; waited < 24000 && Lines(ReadFile(out)).empty(); ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ofstream(path, std::ios::app) << "{\"id\": \"r21\", \"prompt\": \"oops\"\n";  // no '}'
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string err = ReadFile(dir + "/err.txt");
  INFO(err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(err.find(path + ":21: not valid JSON") != std::string::npos);
  CHECK(err.find("stopped after 20 finished requests") != std::string::npos);
  CHECK(LinesById(ReadFile(out)).size() == 20);

  WriteFile(path, prompts + "{\"id\": \"r21\", \"prompt\": \"oops\"}\n");
  const CliResult resumed = RunZinf(GenerateArgs(path, out, {"--ignore-eos", "--resume"}, "60"));
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err.find("20 requests already") != std::string::npos);
  CHECK(LinesById(ReadFile(out)).size() == 21);
}

}  // namespace zinf::testing
