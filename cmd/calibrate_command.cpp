// zinf calibrate [--file PATH] [--threads N] [--dram-only] [--small-probes]: measures disk, DRAM
// and compute rates for the planner.
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cmd/calibration.h"
#include "cmd/commands.h"
#include "cmd/flag_checks.h"
#include "cpu/probe.h"

namespace zinf::cli {

void AddCalibrateCommand(CLI::App& app) {
  struct Options {
    std::string file;
    int threads = 0;
    bool dram_only = false;
    bool small_probes = false;  // testing only
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
  command->add_flag("--dram-only", options->dram_only,
                    "only measure the DRAM read rate and print it as JSON on stdout (median and "
                    "spread of its passes; the cache is left alone): the bench scripts' bound");
  command->add_flag("--small-probes", options->small_probes,
                    "testing only: every probe a sixteenth of its size, so that it takes seconds; "
                    "the rates then come from the caches, not DRAM");
  command->callback([options] {
    const int threads = options->threads > 0
                            ? options->threads
                            : static_cast<int>(std::thread::hardware_concurrency());
    if (options->dram_only) {
      const cpu::DramReadRate dram = MeasureDramRate(threads, options->small_probes);
      std::cout << nlohmann::json{{"dram_read_gbps", dram.median_gbps},
                                  {"min_gbps", dram.min_gbps},
                                  {"max_gbps", dram.max_gbps},
                                  {"passes", dram.passes},
                                  {"software_prefetch", dram.software_prefetch},
                                  {"streams", dram.streams},
                                  {"threads", threads}}
                       .dump()
                << "\n";
      return;
    }
    Calibrate(options->file, threads, options->small_probes);
  });
}

}  // namespace zinf::cli
