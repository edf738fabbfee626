// zinf calibrate [--file PATH] [--threads N]: measures disk, DRAM and compute rates for the planner.
#include <thread>

#include "cmd/calibration.h"
#include "cmd/commands.h"
#include "cmd/flag_checks.h"

namespace zinf::cli {

void AddCalibrateCommand(CLI::App& app) {
  struct Options {
    std::string file;
    int threads = 0;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "calibrate",
      "Measure disk read, DRAM and compute rates on this machine; the planner uses them");
  command->add_option("--file", options->file,
                      "read this file (e.g. a checkpoint's weights.bin) to measure the disk; "
                      "default: a temporary 1 GiB file in the cache directory");
  command->add_option("--threads", options->threads, "CPU threads (default: all cores)")
      ->check(IntAtLeast(1, "leave the flag out for all cores"));
  command->callback([options] {
    const int threads = options->threads > 0
                            ? options->threads
                            : static_cast<int>(std::thread::hardware_concurrency());
    Calibrate(options->file, threads);
  });
}

}  // namespace zinf::cli
