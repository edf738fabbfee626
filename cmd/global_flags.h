// The flags every command takes, before or after its name (--log-level, -q, -v, --version), and
// the one place a command-line mistake becomes exit code 2 with a message naming what was wrong.
#pragma once

#include <spdlog/common.h>

#include <CLI/CLI.hpp>

#include <string>

namespace zinf::cli {

struct GlobalFlags {
  std::string log_level;  // empty: info, or what -q / -v say
  bool quiet = false;     // -q: warnings and errors only
  int verbose = 0;        // -v: debug, -vv: trace
};

// Registers the global flags on the main app and lets every subcommand registered after this
// call pass unknown options up to it (CLI11 fallthrough), so `zinf generate ... -v` works.
void AddGlobalFlags(CLI::App& app, GlobalFlags& flags);

// After every command is registered: each command's --help ends with the global flags.
void DescribeGlobalFlags(CLI::App& app);

// The log level the flags ask for.
spdlog::level::level_enum LogLevelFor(const GlobalFlags& flags);

// Reports a CLI11 parse error once (to stderr) and returns the exit code: 0 for --help and
// --version (printed to stdout), kExitUsage for every mistake, an unknown subcommand named.
int ReportParseError(const CLI::App& app, const CLI::ParseError& error);

}  // namespace zinf::cli
