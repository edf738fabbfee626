// `zinf bench --plot`: decode tokens/s against batch size (log scale), one line per series of
// rows that differ only in batch size, each with the plan's bound dashed. SVG text, drawn by hand.
#pragma once

#include <string>
#include <vector>

#include "cmd/bench_report.h"

namespace zinf::cli {

// What the title says about the run, so a plot found later tells what and where it measured.
struct PlotInfo {
  std::string model;    // "llama-7m.zinf: llama, 4 layers, f32"
  std::string machine;  // "Intel Xeon Platinum 8375C, 2 threads"
  std::string date;     // "2025-01-31"
};

// The rate (y) axis. Linear from 0 to just above the highest measured mean + sd, so the measured
// lines fill the plot; bounds raise the top only when close (within 30%), and bounds far above are
// drawn clipped, their values written above the plot. Logarithmic instead when a linear axis
// would squash a series into its bottom sixth or a point into its bottom 5% (resident weights
// 10× faster than streamed ones, or rates that grow 30× from batch 1 to 32): then from a little
// below the lowest measurement to a little above the highest, so each line shows how it scales.
struct RateAxis {
  double low = 0, high = 1;   // the axis' ends
  std::vector<double> ticks;  // linear: from low to high; log: those inside
  bool log = false;
};
RateAxis ChooseRateAxis(const std::vector<BenchRow>& rows);

// The plot area is the rect with id "plot-area"; measured points are circles of class "measured".
std::string ThroughputPlotSvg(const std::vector<BenchRow>& rows, const PlotInfo& info);

}  // namespace zinf::cli
