// Runs the zinf binary as a user would, capturing its exit code, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace zinf::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `zinf ARGS...` with optional stdin text; arguments are passed without a shell.
CliResult RunZinf(const std::vector<std::string>& args, const std::string& stdin_text = "");

// The stories260K checkpoint converted by the CLI once per process.
const std::string& ConvertedStories260KDir();

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
std::vector<std::string> Lines(const std::string& text);

}  // namespace zinf::testing
