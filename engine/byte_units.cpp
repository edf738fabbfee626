// FormatBytes (engine/byte_units.h).
#include "engine/byte_units.h"

#include <fmt/format.h>

#include <array>

namespace zinf {

namespace {

struct Scaled {
  double value;
  const char* unit;
};

Scaled Scale(uint64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  return {value, kUnits[unit]};
}

std::string WithDecimals(uint64_t bytes, int decimals) {
  const Scaled scaled = Scale(bytes);
  if (scaled.unit[0] == 'B') return fmt::format("{} B", bytes);
  return fmt::format("{:.{}f} {}", scaled.value, decimals, scaled.unit);
}

// Three significant digits: 1.59, 26.1, 512.
int DecimalsFor(uint64_t bytes) {
  const double value = Scale(bytes).value;
  return value >= 100 ? 0 : value >= 10 ? 1 : 2;
}

}  // namespace

std::string FormatBytes(uint64_t bytes) { return WithDecimals(bytes, DecimalsFor(bytes)); }

std::string FormatBytesBeside(uint64_t bytes, uint64_t other) {
  for (int decimals = DecimalsFor(bytes); decimals <= 9; ++decimals) {
    if (bytes == other || WithDecimals(bytes, decimals) != WithDecimals(other, decimals)) {
      return WithDecimals(bytes, decimals);
    }
  }
  return fmt::format("{} B", bytes);
}

std::string FormatRate(double per_second) {
  if (per_second >= 1 || per_second <= 0) return fmt::format("{:.1f}", per_second);
  return fmt::format("{:.3g}", per_second);
}

}  // namespace zinf
