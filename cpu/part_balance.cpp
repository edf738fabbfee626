// PartBalance: parts proportional to smoothed, clamped relative speeds.
#include "cpu/part_balance.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"

namespace zinf::cpu {

namespace {

// How far one call moves a thread's speed towards what that call measured: a decode step makes
// ~50 balanced calls, so a thread slowed for a few milliseconds gets a smaller part within a step,
// while one call's jitter moves the split by a tenth of its own error.
constexpr double kSmoothing = 0.1;
// Speeds are kept between these before the threads' mean is restored, so no thread counts as more
// than four times as fast as another, whatever calls measured (a worker descheduled for a whole
// time slice, say): the slowest thread's part stays at least a quarter of the fastest one's.
constexpr double kMinRelativeSpeed = 0.5;
constexpr double kMaxRelativeSpeed = 2.0;

}  // namespace

PartBalance::PartBalance(int num_threads)
    : relative_speeds_(std::max(num_threads, 1), 1.0), rates_(std::max(num_threads, 1)) {}

void PartBalance::Split(int64_t count, int64_t grain, std::span<int64_t> begins) const {
  const int num_parts = static_cast<int>(begins.size()) - 1;
  ZINF_CHECK(num_parts >= 1 && num_parts <= static_cast<int>(relative_speeds_.size()),
             "{} parts for {} threads", num_parts, relative_speeds_.size());
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
  ZINF_CHECK(begins.size() == seconds.size() + 1 &&
                 num_parts <= static_cast<int>(relative_speeds_.size()),
             "{} part starts and {} times for {} threads", begins.size(), seconds.size(),
             relative_speeds_.size());
  // Only the parts that had work say anything about their thread: an empty part (a small call
  // cut by a skewed split) leaves its thread's speed as it was, and the others are compared
  // among themselves.
  double mean_rate = 0;
  int measured = 0;
  for (int p = 0; p < num_parts; ++p) {
    const auto indices = static_cast<double>(begins[p + 1] - begins[p]);
    rates_[p] = indices > 0 && seconds[p] > 0 ? indices / seconds[p] : 0;
    if (rates_[p] > 0) {
      mean_rate += rates_[p];
      ++measured;
    }
  }
  if (measured < 2) return;  // nothing to compare
  mean_rate /= measured;
  double mean_speed_before = 0;
  double mean_speed = 0;
  for (int p = 0; p < num_parts; ++p) {
    if (rates_[p] == 0) continue;
    double& speed = relative_speeds_[p];
    mean_speed_before += speed / measured;
    const double target = std::clamp(rates_[p] / mean_rate, kMinRelativeSpeed, kMaxRelativeSpeed);
    speed = std::clamp(speed + kSmoothing * (target - speed), kMinRelativeSpeed, kMaxRelativeSpeed);
    mean_speed += speed / measured;
  }
  // The measured threads keep the mean speed they had, so the speeds of threads this call left
  // out stay comparable with theirs.
  for (int p = 0; p < num_parts; ++p) {
    if (rates_[p] > 0) relative_speeds_[p] *= mean_speed_before / mean_speed;
  }
}

}  // namespace zinf::cpu
