// Which `zinf bench` rows make one line of the plot (rows that differ only in batch size) and
// what that line is called, in words a person reads without knowing zinf's flags.
#pragma once

#include <string>
#include <vector>

#include "cmd/bench_report.h"

namespace zinf::cli {

struct BenchSeries {
  std::string label;                    // "streamed, prompt 32": only what differs between series
  std::vector<const BenchRow*> points;  // by batch size
};

struct BenchSeriesSet {
  std::vector<BenchSeries> series;  // in the order the sweep ran them
  std::string shared;  // what every series has in common, for the subtitle: "prefetch auto, ..."
};

// Groups rows by (weights, prefetch depth, prompt, gen, refill). A field that is the same in
// every series moves from the labels to `shared`; with a single series its label names the
// weights placement, so the legend is never blank.
BenchSeriesSet GroupSeries(const std::vector<BenchRow>& rows);

}  // namespace zinf::cli
