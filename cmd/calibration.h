// The measured rates the planner uses: `zinf calibrate` measures and caches them; other commands
// read the cache (and measure on first use when a plan needs offloading).
#pragma once

#include <optional>
#include <string>

#include "engine/planner/planner.h"

namespace zinf::cli {

// $XDG_CACHE_HOME/zinf/calibration.json, or ~/.cache/zinf/calibration.json.
std::string CalibrationCachePath();

// Measures disk (reading `probe_file`, or a temporary 1 GiB file beside the cache when empty),
// DRAM and compute rates, logs them, and writes the cache.
Bandwidths Calibrate(const std::string& probe_file, int num_threads);

// The cached rates, when a calibration has run on this machine.
std::optional<Bandwidths> LoadCalibration();

}  // namespace zinf::cli
