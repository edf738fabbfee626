// The calibration cache: what `zinf calibrate` measured, as JSON in the user's cache directory,
// the CPU's rates kept for each thread count calibrated, since they hold only for that count.
#pragma once

#include <optional>
#include <string>

#include "engine/planner/planner.h"

namespace zinf::cli {

// The CPU's product rates by weight format as the cache stores them (int4 by group size: "int4"
// is groups of 64, as caches from before hold it).
struct TokenRatesField {
  const char* key;
  DType weights;
  int group_size;  // int4 only
  TokenRates Bandwidths::*field;
};
inline constexpr TokenRatesField kTokenRates[] = {
    {"f32", DType::kF32, 0, &Bandwidths::f32_by_tokens},
    {"f16", DType::kF16, 0, &Bandwidths::f16_by_tokens},
    {"int8", DType::kI8, 0, &Bandwidths::int8_by_tokens},
    {"int4", DType::kQ4, 64, &Bandwidths::int4_by_tokens},
    {"int4_g32", DType::kQ4, 32, &Bandwidths::int4_g32_by_tokens},
    {"int4_g128", DType::kQ4, 128, &Bandwidths::int4_g128_by_tokens},
};

// One calibration: the planner's rates (cpu_threads: the threads the CPU's were measured with;
// gpu_measured: whether a GPU's are among them) and what the cache records beside them.
struct CalibrationRecord {
  Bandwidths rates;
  double dram_min_gbps = 0, dram_max_gbps = 0;  // the DRAM probe's passes
  std::string disk_probe_file;
  bool direct_io = false;
};

// $XDG_CACHE_HOME/zinf/calibration.json, or ~/.cache/zinf/calibration.json.
std::string CalibrationCachePath();

// Writes `record` as the cache's latest calibration; the CPU's rates stored for other thread
// counts stay beside it (unless an older DRAM probe measured them).
void StoreCalibration(const CalibrationRecord& record);

// The cached rates, when a calibration has run on this machine: the CPU's as measured with
// `threads` where the cache holds them, else the latest calibration's (cpu_threads says which).
std::optional<Bandwidths> LoadCalibration(int threads);

}  // namespace zinf::cli
