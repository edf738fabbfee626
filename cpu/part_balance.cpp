// PartBalance: parts proportional to smoothed, clamped relative speeds.
#include "cpu/part_balance.h"

#include <algorithm>
#include <cmath>

namespace zinf::cpu {

namespace {

// How far one call moves a thread's speed towards what that call measured: a decode step makes
// ~50 balanced calls, so a thread slowed for a few milliseconds gets a smaller part within a step,
// while one call's jitter moves the split by a tenth of its own error.
constexpr double kSmoothing = 0.1;
// Speeds are kept between these before the threads' mean is restored, so no thread counts as more
// than four times as fast as another, whatever calls measured (a worker descheduled for a whole
// time slice, say): a part never shrinks to nothing.
constexpr double kMinRelativeSpeed = 0.5;
constexpr double kMaxRelativeSpeed = 2.0;

}  // namespace

PartBalance::PartBalance(int num_threads) : relative_speeds_(std::max(num_threads, 1), 1.0) {}

void PartBalance::Split(int64_t count, int64_t grain, std::span<int64_t> begins) const {
  const int num_parts = static_cast<int>(begins.size()) - 1;
  grain = std::max<int64_t>(grain, 1);
  double total_speed = 0;
  for (int p = 0; p < num_parts; ++p) total_speed += relative_speeds_[p];
  double speed_before = 0;
  begins[0] = 0;
  for (int p = 1; p < num_parts; ++p) {
    speed_before += relative_speeds_[p - 1];
    const double share = speed_before / total_speed;
    const auto grains =
        std::llround(static_cast<double>(count) * share / static_cast<double>(grain));
    begins[p] = std::clamp<int64_t>(grains * grain, begins[p - 1], count);
  }
  begins[num_parts] = count;
}

void PartBalance::Record(std::span<const int64_t> begins, std::span<const double> seconds) {
  const int num_parts = static_cast<int>(seconds.size());
  std::vector<double> rates(num_parts);
  double mean_rate = 0;
  for (int p = 0; p < num_parts; ++p) {
    const auto indices = static_cast<double>(begins[p + 1] - begins[p]);
    if (indices == 0 || seconds[p] <= 0) return;  // nothing to learn from this call
    rates[p] = indices / seconds[p];
    mean_rate += rates[p] / num_parts;
  }
  double mean_speed_before = 0;
  double mean_speed = 0;
  for (int p = 0; p < num_parts; ++p) {
    mean_speed_before += relative_speeds_[p] / num_parts;
    const double measured = std::clamp(rates[p] / mean_rate, kMinRelativeSpeed, kMaxRelativeSpeed);
    double& speed = relative_speeds_[p];
    speed =
        std::clamp(speed + kSmoothing * (measured - speed), kMinRelativeSpeed, kMaxRelativeSpeed);
    mean_speed += speed / num_parts;
  }
  // The threads of this call keep the mean speed they had, so the speeds of threads a small call
  // left out stay comparable with theirs.
  for (int p = 0; p < num_parts; ++p) relative_speeds_[p] *= mean_speed_before / mean_speed;
}

}  // namespace zinf::cpu
