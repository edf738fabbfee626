// Global flags and usage errors; see global_flags.h.
#include "cmd/global_flags.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "cmd/exit_codes.h"
#include "cmd/flag_checks.h"
#include "cmd/version.h"

namespace zinf::cli {

namespace {

constexpr const char* kGlobalFlagsHelp =
    "Global flags (before or after the command): -q/--quiet, -v/--verbose (-vv: trace), "
    "--log-level LEVEL, --version, --help";

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!command->get_name().empty()) names.push_back(command->get_name());
  }
  return names;
}

}  // namespace

void AddGlobalFlags(CLI::App& app, GlobalFlags& flags) {
  // Subcommands inherit fallthrough when they are added: an option a command does not know is
  // tried on the main app, which is how a global flag works after the command's name.
  app.fallthrough();
  CLI::Option* log_level =
      app.add_option("--log-level", flags.log_level,
                     "log detail on stderr: trace, debug, info (default), warn, error, off")
          ->check(OneOf({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  CLI::Option* quiet = app.add_flag("-q,--quiet", flags.quiet, "log warnings and errors only");
  CLI::Option* verbose =
      app.add_flag("-v,--verbose", flags.verbose, "log debug detail; -vv also logs trace detail");
  quiet->excludes(verbose);
  log_level->excludes(quiet)->excludes(verbose);
  app.set_version_flag(
      "--version", [] { return VersionText(); },
      "print the version, build type, git commit, CPU kernel level and whether "
      "CUDA is compiled in, then exit");
}

void DescribeGlobalFlags(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    command->footer(kGlobalFlagsHelp);
  }
}

spdlog::level::level_enum LogLevelFor(const GlobalFlags& flags) {
  if (!flags.log_level.empty()) return spdlog::level::from_str(flags.log_level);
  if (flags.quiet) return spdlog::level::warn;
  if (flags.verbose >= 2) return spdlog::level::trace;
  if (flags.verbose == 1) return spdlog::level::debug;
  return spdlog::level::info;
}

int ReportParseError(const CLI::App& app, const CLI::ParseError& error) {
  // --help and --version are CLI11 "errors" with exit code 0; their text goes to stdout.
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(error);
  }
  const std::string commands = fmt::format("{}", fmt::join(CommandNames(app), ", "));
  // No command was recognised: the first word that is not an option is a misspelt one.
  if (app.get_subcommands().empty()) {
    for (const std::string& word : app.remaining()) {
      if (!word.starts_with("-")) {
        spdlog::error("unknown subcommand '{}'; commands: {} (zinf COMMAND --help for more)", word,
                      commands);
        return kExitUsage;
      }
    }
    if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
      spdlog::error("a command is required; commands: {} (zinf COMMAND --help for more)", commands);
      return kExitUsage;
    }
  }
  const CLI::App* command = app.get_subcommands().empty() ? nullptr : app.get_subcommands()[0];
  spdlog::error("{} (run zinf {}--help for the options)", error.what(),
                command != nullptr ? command->get_name() + " " : "");
  return kExitUsage;
}

}  // namespace zinf::cli
