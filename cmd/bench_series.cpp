// Series and their names for the bench plot; see bench_series.h.
#include "cmd/bench_series.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace zinf::cli {

namespace {

constexpr size_t kFields = 5;  // weights, prefetch, prompt, gen, refill
using Fields = std::array<std::string, kFields>;

// "10:100" → "10–100".
std::string Lengths(const std::string& text) {
  std::string out = text;
  if (const size_t colon = out.find(':'); colon != std::string::npos) {
    out.replace(colon, 1, "–");
  }
  return out;
}

// Each field as a person would say it, not as the flag is spelled.
Fields Describe(const BenchRow& row) {
  const std::string weights = row.weights == "stream"     ? "streamed"
                              : row.weights == "resident" ? "resident"
                              : row.weights == "auto"     ? "placed by the plan"
                                                          : row.weights;
  const std::string prefetch =
      row.prefetch_depth < 0 ? "prefetch auto" : fmt::format("prefetch {}", row.prefetch_depth);
  const std::string refill = row.refill == "continuous" ? "continuous refill"
                             : row.refill == "static"   ? "static batches"
                                                        : row.refill;
  return {weights, prefetch, "prompt " + Lengths(row.prompt_len), "gen " + Lengths(row.gen_len),
          refill};
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

}  // namespace

BenchSeriesSet GroupSeries(const std::vector<BenchRow>& rows) {
  std::vector<Fields> keys;
  BenchSeriesSet set;
  for (const BenchRow& row : rows) {
    const Fields key = Describe(row);
    const auto found = std::find(keys.begin(), keys.end(), key);
    if (found == keys.end()) {
      keys.push_back(key);
      set.series.push_back({"", {&row}});
    } else {
      set.series[found - keys.begin()].points.push_back(&row);
    }
  }
  std::array<bool, kFields> varies{};
  for (size_t f = 0; f < kFields; ++f) {
    for (const Fields& key : keys) varies[f] = varies[f] || key[f] != keys.front()[f];
  }
  if (std::none_of(varies.begin(), varies.end(), [](bool v) { return v; })) varies[0] = true;
  std::vector<std::string> shared;
  for (size_t f = 0; f < kFields && !keys.empty(); ++f) {
    if (!varies[f]) shared.push_back(keys.front()[f]);
  }
  set.shared = Join(shared);
  for (size_t s = 0; s < keys.size(); ++s) {
    std::vector<std::string> parts;
    for (size_t f = 0; f < kFields; ++f) {
      if (varies[f]) parts.push_back(keys[s][f]);
    }
    set.series[s].label = Join(parts);
    std::stable_sort(
        set.series[s].points.begin(), set.series[s].points.end(),
        [](const BenchRow* a, const BenchRow* b) { return a->batch_size < b->batch_size; });
  }
  return set;
}

}  // namespace zinf::cli
