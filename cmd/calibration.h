// The measured rates the planner uses: `zinf calibrate` measures them and keeps them in the
// cache (cmd/calibration_cache.h) that other commands read.
#pragma once

#include <string>

#include "cmd/calibration_cache.h"
#include "cpu/probe.h"
#include "engine/planner/planner.h"

namespace zinf::cli {

// Measures disk (reading `probe_file`, or a temporary 1 GiB file beside the cache when empty),
// DRAM and compute rates with `num_threads` threads, logs them, and writes the cache. With
// `small_probes` (calibrate --small-probes, testing only) every probe is a sixteenth of its size,
// so that tests of the cache and of the planner's use of it take seconds even under sanitizers;
// its rates then come from the caches, not DRAM.
Bandwidths Calibrate(const std::string& probe_file, int num_threads, bool small_probes = false);

// The DRAM read rate Calibrate stores and calibrate --dram-only prints: cpu::MeasureDramRead over
// its 1 GiB buffer, or a sixteenth of it with `small_probes`.
cpu::DramReadRate MeasureDramRate(int num_threads, bool small_probes);

}  // namespace zinf::cli
