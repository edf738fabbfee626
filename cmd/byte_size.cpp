// ParseByteSize, PhysicalMemoryBytes and DefaultCpuMemBytes.
#include "cmd/byte_size.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

#include "engine/error.h"

namespace zinf::cli {

namespace {

// The size `text` names, or (value unset) what is wrong with it.
struct SizeOrProblem {
  uint64_t bytes = 0;
  std::string problem;
};

SizeOrProblem ReadByteSize(const std::string& text) {
  size_t number_end = 0;
  double value = 0;
  try {
    value = std::stod(text, &number_end);
  } catch (const std::exception&) {
    return {0, fmt::format("'{}' is not a size (e.g. 24G, 512M, 1.5T)", text)};
  }
  std::string unit = text.substr(number_end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB")) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with("B")) unit.resize(unit.size() - 1);
  double multiplier = 1;
  if (unit == "K") multiplier = 1024.0;
  else if (unit == "M") multiplier = 1024.0 * 1024;
  else if (unit == "G") multiplier = 1024.0 * 1024 * 1024;
  else if (unit == "T") multiplier = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") {
    return {0, fmt::format("unknown unit in '{}' (use K, M, G or T)", text)};
  }
  if (!(value >= 0) || !std::isfinite(value)) return {0, fmt::format("'{}' is not a size", text)};
  return {static_cast<uint64_t>(value * multiplier), ""};
}

}  // namespace

uint64_t ParseByteSize(const std::string& text, const std::string& option_name) {
  const SizeOrProblem size = ReadByteSize(text);
  if (!size.problem.empty()) Fail("{}: {}", option_name, size.problem);
  return size.bytes;
}

std::string ByteSizeProblem(const std::string& text) { return ReadByteSize(text).problem; }

namespace {

// A /proc/meminfo field in bytes (0 when absent).
uint64_t MeminfoBytes(const std::string& field) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == field) return kib * 1024;
  }
  return 0;
}

}  // namespace

uint64_t PhysicalMemoryBytes() { return MeminfoBytes("MemTotal:"); }

uint64_t DefaultCpuMemBytes() {
  const uint64_t total = PhysicalMemoryBytes();
  // Kernels before 3.14 have no MemAvailable: the total less the reserve is the best guess there.
  const uint64_t available = MeminfoBytes("MemAvailable:");
  const uint64_t base = available > 0 ? available : total;
  const uint64_t reserve = std::max<uint64_t>(uint64_t{1} << 30, total / 16);
  // Less free than the reserve: half of it, so that a small model still runs and a large one is
  // refused by the planner with the numbers (a budget of 0 would be refused without them).
  return base > reserve ? base - reserve : base / 2;
}

}  // namespace zinf::cli
