// The measurement behind PrefetchNextTile. An Emerald Rapids guest (2 threads, 1.1B shape,
// resident weights) decoded f32 at 6.3 tok/s without the requests and 5.1 with them, int8 at 20.9
// vs 19.9, but int4 at 17.7 vs 28.5: there the unpacking slows the reads enough that the hardware
// prefetchers fall behind. The kernels' arithmetic is the same either way; only speed differs.
#include "cpu/tile_prefetch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

namespace zinf::cpu {

namespace {

constexpr int kDTypes = 5;
// Products timed per setting: enough for a median that one slow product (an interrupt, the other
// tenant of a VM) cannot move; a 22-layer model decides in its first decode step.
constexpr int kTrialsPerSetting = 7;
// Off only when clearly faster: with the requests is what the kernels were tuned with.
constexpr double kMargin = 1.03;

std::array<std::atomic<bool>, kDTypes> g_prefetch = {true, true, true, true, true};

struct Measurement {
  DType weights;
  int64_t cols;
  std::vector<double> rates[2];  // bytes per second, [off, on]
  std::optional<bool> prefetch;  // the decision, once made
};

struct Tuner {
  std::mutex mutex;
  std::vector<Measurement> measurements;
};

Tuner& TheTuner() {
  static Tuner tuner;
  return tuner;
}

double Median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

bool PrefetchNextTile(DType weights, int64_t tokens) {
  return tokens > 1 || g_prefetch[static_cast<int>(weights)].load(std::memory_order_relaxed);
}

PrefetchTrial BeginOneTokenProduct(DType weights, int64_t cols) {
  Tuner& tuner = TheTuner();
  std::lock_guard lock(tuner.mutex);
  auto found =
      std::find_if(tuner.measurements.begin(), tuner.measurements.end(),
                   [&](const Measurement& m) { return m.weights == weights && m.cols == cols; });
  if (found == tuner.measurements.end()) {
    tuner.measurements.push_back({weights, cols, {}, std::nullopt});
    found = tuner.measurements.end() - 1;
  }
  Measurement& m = *found;
  // Alternating, so that both settings see the same stretch of the machine's load.
  const bool prefetch = m.prefetch.value_or(m.rates[1].size() < m.rates[0].size());
  g_prefetch[static_cast<int>(weights)].store(prefetch, std::memory_order_relaxed);
  if (m.prefetch) return {-1, prefetch};
  return {static_cast<int>(found - tuner.measurements.begin()), prefetch};
}

void EndOneTokenProduct(const PrefetchTrial& trial, double seconds, double weight_bytes) {
  if (trial.key < 0 || seconds <= 0) return;
  Tuner& tuner = TheTuner();
  std::lock_guard lock(tuner.mutex);
  Measurement& m = tuner.measurements[trial.key];
  if (m.prefetch) return;
  m.rates[trial.prefetch ? 1 : 0].push_back(weight_bytes / seconds);
  if (m.rates[1].size() < kTrialsPerSetting) return;
  const double off = Median(m.rates[0]), on = Median(m.rates[1]);
  const bool prefetch = off < kMargin * on;
  m.prefetch = prefetch;
  spdlog::debug("one-token {} products over rows of {}: next-tile prefetch {} ({:.1f} GB/s with, "
                "{:.1f} without)",
                DTypeName(m.weights), m.cols, prefetch ? "on" : "off", on / 1e9, off / 1e9);
}

}  // namespace zinf::cpu
