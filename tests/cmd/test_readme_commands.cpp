// Every command in the README's "Use" section runs as written: the block is read from README.md,
// continuation lines joined, and each command run through bash from the repository root, with
// only scratch paths, a small stand-in for the 7B model and calibrate's small probes swapped in.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

// The commands of the first ```sh block after "## Use", comments dropped, continuations joined.
std::vector<std::string> UseCommands(const std::string& readme) {
  const size_t section = readme.find("\n## Use\n");
  REQUIRE(section != std::string::npos);
  const size_t open = readme.find("```sh\n", section);
  REQUIRE(open != std::string::npos);
  const size_t body = open + 6;
  const std::string block = readme.substr(body, readme.find("```", body) - body);
  std::vector<std::string> commands;
  std::string pending;
  for (std::string line : Lines(block)) {
    if (line.find_first_not_of(' ') == std::string::npos || line.starts_with("#")) continue;
    const bool continues = line.ends_with("\\");
    if (continues) line.pop_back();
    pending += line;
    if (!continues) {
      commands.push_back(pending);
      pending.clear();
    }
  }
  return commands;
}

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

TEST_CASE("every command in the README's Use section runs as written", "[readme]") {
  const std::string scratch = MakeTempDir("readme-use");
  const std::vector<std::string> commands =
      UseCommands(ReadFile(std::string(ZINF_SOURCE_DIR) + "/README.md"));
  REQUIRE(commands.size() >= 10);
  for (const std::string& written : commands) {
    std::string command = written;
    ReplaceAll(command, "/tmp/", scratch + "/tmp/");
    ReplaceAll(command, "/nvme/", scratch + "/nvme/");
    // Last: the binary's own path may hold "/tmp/" (a checkout under /tmp).
    ReplaceAll(command, "build/zinf", ZINF_BINARY);
    // A 7M-parameter stand-in with Llama 2's layout, in place of 13 GB of synthetic 7B weights.
    if (command.find("--synthetic") != std::string::npos) {
      ReplaceAll(command, "configs/llama-2-7b.json", "bench/configs/llama-7m-wide-vocab.json");
    }
    // Probes a sixteenth of their size: the full ones take minutes under the sanitizers.
    ReplaceAll(command, "zinf calibrate", "zinf calibrate --small-probes");
    INFO("README: " << written);
    INFO("ran:    " << command);
    const std::string log = scratch + "/log.txt";
    const std::string script = scratch + "/command.sh";
    WriteFile(script, "set -o pipefail\n" + command + "\n");
    const std::string shell = "cd '" + std::string(ZINF_SOURCE_DIR) + "' && mkdir -p '" + scratch +
                              "/tmp' '" + scratch + "/nvme' && XDG_CACHE_HOME='" + scratch +
                              "/cache' bash '" + script + "' > '" + log + "' 2>&1";
    const int status = std::system(shell.c_str());
    INFO(ReadFile(log));
    CHECK(status == 0);
  }
}

}  // namespace zinf::testing
