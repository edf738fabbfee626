// Axis arithmetic for the charts zinf draws: "nice" tick values (1, 2 or 5 × 10^k) with short
// labels, and linear and logarithmic maps from data to pixels.
#pragma once

#include <string>
#include <vector>

namespace zinf::cli {

// Evenly spaced ticks from a multiple of the step at or below `low` to one at or above `high`,
// the step being the smallest 1, 2 or 5 × 10^k that needs at most `max_intervals` intervals.
// A person reads 0, 500, 1000 at a glance; 0, 33044, 66089 not.
std::vector<double> NiceTicks(double low, double high, int max_intervals = 7);

// Ticks for a logarithmic axis over [low, high] (both > 0): the 1, 2 and 5 × 10^k inside it, or
// only the powers of ten when those would be more than `max_ticks`. Label them with CompactNumber.
// The ends need not be ticks: rounding them out to the next 1, 2 or 5 would waste up to 40% of a
// decade at each end.
std::vector<double> NiceLogTicks(double low, double high, int max_ticks = 10);

// Labels for ticks from NiceTicks: one suffix for the whole axis (k from 10 000, M from 10^7) and
// only as many decimals as the step needs: "0", "5k", "10k"; "0.5", "1", "1.5".
std::vector<std::string> TickLabels(const std::vector<double>& ticks);

// One value with about three significant digits and the same suffixes: 33044 → "33k",
// 4581 → "4.58k", 950 → "950", 0.1234 → "0.123".
std::string CompactNumber(double value);

// A data interval onto a pixel interval (start may be above end: SVG's y grows downwards).
struct LinearScale {
  double low, high, start, end;
  double operator()(double value) const;
};

// The same on a logarithmic axis, for batch sizes: doubling the batch moves a fixed distance.
struct LogScale {
  double low, high, start, end;  // low and high > 0
  double operator()(double value) const;
};

// Where a log batch axis puts its ticks: every batch size measured when they are few (a person
// reads off the sizes that were run), else the powers of two between the smallest and largest.
std::vector<int> BatchTicks(std::vector<int> batch_sizes, int max_ticks = 10);

}  // namespace zinf::cli
