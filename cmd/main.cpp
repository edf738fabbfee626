// zinf's entry point: parses the command line and reports any error once, here, with the exit
// code cmd/exit_codes.h gives it: a mistake on the command line is 2, before any work starts.
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/global_flags.h"
#include "cmd/version.h"
#include "engine/error.h"

namespace zinf::cli {
int g_exit_code = kExitOk;
}  // namespace zinf::cli

int main(int argc, char** argv) {
  using namespace zinf::cli;
  // Logs go to stderr; stdout carries only results.
  spdlog::set_default_logger(spdlog::stderr_color_mt("zinf"));
  spdlog::set_pattern("%^[%l]%$ %v");

  CLI::App app{"zinf: run large language models on one GPU or the CPU, streaming weights from "
               "DRAM and NVMe"};
  app.require_subcommand(1);
  GlobalFlags global_flags;
  AddGlobalFlags(app, global_flags);  // before the commands, which inherit its fallthrough
  // Runs once every flag is parsed and checked, before the command's callback: until then, a
  // zinf::Error (a flag parsed into an enum, say) is a usage error, not a failed run.
  bool flags_parsed = false;
  app.parse_complete_callback([&] {
    spdlog::set_level(LogLevelFor(global_flags));
    flags_parsed = true;
    // What a bug report needs first: which build ran, with which arguments.
    spdlog::debug("{}", VersionLine());
    spdlog::trace("command line: {}", fmt::join(argv, argv + argc, " "));
  });
  AddConvertCommand(app);
  AddGenerateCommand(app);
  AddTokenizeCommands(app);
  AddChatTemplateCommand(app);
  AddPlanCommand(app);
  AddCalibrateCommand(app);
  AddBenchCommand(app);
  AddPerplexityCommand(app);
  AddMergeCommand(app);
  AddVerifyCommand(app);
  DescribeGlobalFlags(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return ReportParseError(app, error);
  } catch (const zinf::Error& error) {
    spdlog::error("{}", error.what());
    return flags_parsed ? kExitError : kExitUsage;
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    return kExitError;
  }
  return g_exit_code;
}
