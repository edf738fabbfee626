// Runs the zinf binary as a user would, capturing its exit code, stdout and stderr.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace zinf::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `zinf ARGS...` with optional stdin text; arguments are passed without a shell. `in_child`,
// when set, runs in the child just before exec (e.g. to set a resource limit).
CliResult RunZinf(const std::vector<std::string>& args, const std::string& stdin_text = "",
                  const std::function<void()>& in_child = {});

// Starts `zinf ARGS...` in the background (stderr to /dev/null) once `out` exists with fewer than
// `lines` lines, waits until it holds that many (or two minutes pass: a loaded CI machine can be
// slow), then sends `signal` and returns the child's wait status.
int InterruptZinfAfterLines(const std::vector<std::string>& args, const std::string& out,
                            size_t lines, int signal);

// The stories260K checkpoint converted by the CLI once per process.
const std::string& ConvertedStories260KDir();

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
std::vector<std::string> Lines(const std::string& text);
// A results line's "id" as a map key: a string as is, a number as its digits (zinf treats 7 and "7"
// as one id).
std::string IdKey(const nlohmann::json& id);
// The lines of a zinf output file by their "id" (IdKey), as written (byte for byte). A line that is not a
// JSON object with an "id", or an id seen twice, fails the current test.
std::map<std::string, std::string> LinesById(const std::string& jsonl);

}  // namespace zinf::testing
