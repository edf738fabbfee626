// zinf's entry point: parses the command line and reports any error once, here.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cmd/commands.h"
#include "engine/error.h"

namespace zinf::cli {
int g_exit_code = 0;
}  // namespace zinf::cli

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only results.
  spdlog::set_default_logger(spdlog::stderr_color_mt("zinf"));
  spdlog::set_pattern("%^[%l]%$ %v");

  CLI::App app{"zinf: run large language models on one GPU or the CPU, streaming weights from "
               "DRAM and NVMe"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  app.parse_complete_callback([&] { spdlog::set_level(spdlog::level::from_str(log_level)); });
  zinf::cli::AddConvertCommand(app);
  zinf::cli::AddGenerateCommand(app);
  zinf::cli::AddTokenizeCommands(app);
  zinf::cli::AddPlanCommand(app);
  zinf::cli::AddCalibrateCommand(app);
  zinf::cli::AddBenchCommand(app);
  zinf::cli::AddPerplexityCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    return 1;
  }
  return zinf::cli::g_exit_code;
}
