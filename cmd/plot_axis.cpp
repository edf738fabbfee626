// Nice ticks and scales; see plot_axis.h.
#include "cmd/plot_axis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace zinf::cli {

std::vector<double> NiceTicks(double low, double high, int max_intervals) {
  if (!(high > low)) high = low + (low == 0 ? 1 : std::abs(low));  // one value: an axis around it
  max_intervals = std::max(max_intervals, 1);
  double magnitude = std::pow(10.0, std::floor(std::log10((high - low) / max_intervals)));
  double step = magnitude;
  for (int i = 0;; ++i) {  // 1, 2, 5, 10, 20, ... × magnitude until the ticks fit
    step = magnitude * std::pow(10.0, i / 3) * (i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 5);
    // A relative tolerance keeps 3 × 0.1 from needing a fourth interval for 0.30000000000000004.
    const double first = std::floor(low / step + 1e-9), last = std::ceil(high / step - 1e-9);
    if (last - first <= max_intervals) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(low / step + 1e-9), last = std::ceil(high / step - 1e-9);
  for (double n = first; n <= last; ++n) ticks.push_back(n * step);
  return ticks;
}

std::vector<double> NiceLogTicks(double low, double high, int max_ticks) {
  if (!(low > 0) || !(high > low)) return {};
  for (const std::vector<double>& mantissas :
       {std::vector<double>{1, 2, 5}, std::vector<double>{1}}) {
    std::vector<double> ticks;
    for (int k = static_cast<int>(std::floor(std::log10(low)));
         k <= static_cast<int>(std::ceil(std::log10(high))); ++k) {
      for (double m : mantissas) {
        // The tolerances keep 100 an end tick when the end is 99.99999999999999.
        const double tick = m * std::pow(10.0, k);
        if (tick >= low * (1 - 1e-9) && tick <= high * (1 + 1e-9)) ticks.push_back(tick);
      }
    }
    if (ticks.size() <= static_cast<size_t>(max_ticks) || mantissas.size() == 1) return ticks;
  }
  return {};
}

std::vector<std::string> TickLabels(const std::vector<double>& ticks) {
  if (ticks.empty()) return {};
  double largest = 0;
  for (double tick : ticks) largest = std::max(largest, std::abs(tick));
  const double divisor = largest >= 1e7 ? 1e6 : largest >= 1e4 ? 1e3 : 1;
  const char* suffix = divisor == 1e6 ? "M" : divisor == 1e3 ? "k" : "";
  // The fewest decimals that show every tick exactly, the same for all: 0.5, 1.0, 1.5.
  int decimals = 0;
  for (; decimals < 6; ++decimals) {
    const double scale = std::pow(10.0, decimals);
    if (std::all_of(ticks.begin(), ticks.end(), [&](double tick) {
          const double shifted = tick / divisor * scale;
          return std::abs(shifted - std::round(shifted)) < 1e-6 * std::max(1.0, std::abs(shifted));
        })) {
      break;
    }
  }
  std::vector<std::string> labels;
  for (double tick : ticks) {
    const double scaled = std::abs(tick) < largest * 1e-9 ? 0 : tick / divisor;
    labels.push_back(scaled == 0 ? "0" : fmt::format("{:.{}f}{}", scaled, decimals, suffix));
  }
  return labels;
}

std::string CompactNumber(double value) {
  const double magnitude = std::abs(value);
  const double divisor = magnitude >= 1e6 ? 1e6 : magnitude >= 1e3 ? 1e3 : 1;
  const char* suffix = divisor == 1e6 ? "M" : divisor == 1e3 ? "k" : "";
  const double scaled = value / divisor;
  // Three significant digits, without trailing zeros: 33.0k reads as 33k.
  std::string digits = fmt::format("{:.3g}", scaled);
  if (digits.find('e') != std::string::npos) digits = fmt::format("{:.0f}", scaled);
  return digits + suffix;
}

double LinearScale::operator()(double value) const {
  return start + (end - start) * (value - low) / (high - low);
}

double LogScale::operator()(double value) const {
  return start + (end - start) * std::log(value / low) / std::log(high / low);
}

std::vector<int> BatchTicks(std::vector<int> batch_sizes, int max_ticks) {
  std::sort(batch_sizes.begin(), batch_sizes.end());
  batch_sizes.erase(std::unique(batch_sizes.begin(), batch_sizes.end()), batch_sizes.end());
  if (batch_sizes.size() <= static_cast<size_t>(max_ticks)) return batch_sizes;
  std::vector<int> powers;
  for (long power = 1; power <= batch_sizes.back(); power *= 2) {
    if (power >= batch_sizes.front()) powers.push_back(static_cast<int>(power));
  }
  // Very wide sweeps (1 to 4096): every other power of two keeps the labels apart.
  while (powers.size() > static_cast<size_t>(max_ticks)) {
    std::vector<int> every_other;
    for (size_t i = 0; i < powers.size(); i += 2) every_other.push_back(powers[i]);
    powers = every_other;
  }
  return powers;
}

}  // namespace zinf::cli
