// The zinf subcommands: each registers its options on the CLI and runs from them.
#pragma once

#include <CLI/CLI.hpp>

namespace zinf::cli {

// Each Add*Command registers a subcommand whose callback runs it; errors are thrown as
// zinf::Error and reported once by main().
void AddConvertCommand(CLI::App& app);
void AddGenerateCommand(CLI::App& app);
void AddTokenizeCommands(CLI::App& app);
void AddChatTemplateCommand(CLI::App& app);
void AddPlanCommand(CLI::App& app);
void AddCalibrateCommand(CLI::App& app);
void AddBenchCommand(CLI::App& app);
void AddPerplexityCommand(CLI::App& app);
void AddMergeCommand(CLI::App& app);
void AddVerifyCommand(CLI::App& app);

// Set by the subcommand that ran: the process exit code (cmd/exit_codes.h).
extern int g_exit_code;

}  // namespace zinf::cli
