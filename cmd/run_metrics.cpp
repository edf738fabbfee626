// RunMetrics: derived numbers and their two renderings.
#include "cmd/run_metrics.h"

#include "cmd/generate_progress.h"
#include "engine/byte_units.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace zinf::cli {

namespace {
double Rate(double count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

// How far past the plan a run may go and still be reported as a share of it.
constexpr double kBoundSpread = 1.05;
}  // namespace

RunMetrics ComputeRunMetrics(const GenerationStats& stats, const WeightIoStats& load,
                             const WeightIoStats& end, const Plan& plan,
                             const Bandwidths& bandwidths, double seconds) {
  RunMetrics m;
  m.seconds = seconds;
  m.completed = stats.completed;
  m.failed = stats.failed;
  m.prompt_tokens = stats.prompt_tokens;
  m.generated_tokens = stats.generated_tokens;
  m.prefill_tokens_per_s = Rate(stats.prompt_tokens, stats.prefill_seconds);
  m.decode_tokens_per_s =
      Rate(stats.generated_tokens - stats.prefill_steps_generated, stats.decode_seconds);
  m.generation_tokens_per_s = Rate(stats.generated_tokens, seconds);
  m.steps = stats.steps;
  m.step_seconds = stats.prefill_seconds + stats.decode_seconds;
  m.dram_resident_bytes = load.bytes_read;
  m.nvme_streamed_bytes = end.bytes_read - load.bytes_read;
  m.nvme_gbps = Rate(m.nvme_streamed_bytes / 1e9, seconds);
  m.nvme_read_seconds = end.read_busy_seconds - load.read_busy_seconds;
  m.nvme_read_gbps = Rate(m.nvme_streamed_bytes / 1e9, m.nvme_read_seconds);
  m.weight_wait_seconds = end.read_wait_seconds - load.read_wait_seconds;
  const double read_seconds = m.nvme_streamed_bytes / (bandwidths.disk_read_gbps * 1e9);
  m.overlap_ratio =
      read_seconds > 0 ? std::clamp(1 - m.weight_wait_seconds / read_seconds, 0.0, 1.0) : 1;
  m.predicted_decode_tokens_per_s = plan.predicted_tokens_per_s;
  m.bound = BoundName(plan.bound);
  m.resident_place = TierPlace(Tier::kDevice, plan.placement.backend);
  m.percent_of_bound = Rate(100 * m.decode_tokens_per_s, plan.predicted_tokens_per_s);
  return m;
}

std::string RunMetrics::SummaryLine() const {
  std::string line = fmt::format("{}: {} succeeded, {} failed",
                                 interrupted ? "interrupted" : "finished", completed, failed);
  if (skipped > 0) line += fmt::format(", {} skipped (already in the output)", skipped);
  line += fmt::format(" in {}", FormatDuration(seconds));
  line +=
      fmt::format(" | prefill {} tok at {} tok/s | decode {} tok/s, generation {} tok/s ({} tok)",
                  prompt_tokens, FormatRate(prefill_tokens_per_s), FormatRate(decode_tokens_per_s),
                  FormatRate(generation_tokens_per_s), generated_tokens);
  line += fmt::format(" | weights: {} resident in {}", FormatBytes(dram_resident_bytes),
                      resident_place);
  if (nvme_streamed_bytes > 0) {
    line += fmt::format(", {} streamed from disk at {:.2f} GB/s ({:.2f} GB/s while reading), "
                        "{:.2f} s waiting, overlap {:.0f}%",
                        FormatBytes(nvme_streamed_bytes), nvme_gbps, nvme_read_gbps,
                        weight_wait_seconds, 100 * overlap_ratio);
  }
  if (predicted_decode_tokens_per_s > 0 && decode_tokens_per_s > 0) {
    // The plan's prediction is a bound from the planner's rates; a run well past it means those
    // rates are low, which is worth saying rather than printing "119% of the bound". Within the
    // rates' own spread (calibrate's passes differ by a few percent) the share is the news.
    if (decode_tokens_per_s <= kBoundSpread * predicted_decode_tokens_per_s) {
      line += fmt::format(" | decode at {:.0f}% of the plan's {}-bound {} tok/s", percent_of_bound,
                          bound, FormatRate(predicted_decode_tokens_per_s));
    } else {
      line += fmt::format(" | decode beat the plan's {}-bound {} tok/s: the planner's rates "
                          "are low for this machine (run zinf calibrate)",
                          bound, FormatRate(predicted_decode_tokens_per_s));
    }
  }
  return line + ExpertsSummary();
}

std::string RunMetrics::ExpertsSummary() const {
  if (experts.steps == 0) return "";
  const double steps = static_cast<double>(experts.steps);
  std::string text = fmt::format(" | experts: {:.1f}% of them used per step",
                                 Rate(100.0 * experts.experts_used, experts.experts_total));
  if (experts.bytes_dense == 0) return text + ", all held where they are computed";
  return text + fmt::format(", {} of expert weights moved per step against {} for all of them "
                            "({:.1f}%)",
                            FormatBytes(static_cast<uint64_t>(experts.bytes_moved / steps)),
                            FormatBytes(static_cast<uint64_t>(experts.bytes_dense / steps)),
                            Rate(100.0 * experts.bytes_moved, experts.bytes_dense));
}

nlohmann::json RunMetrics::Json() const {
  nlohmann::json json = {{"seconds", seconds},
                         {"requests", {{"completed", completed}, {"failed", failed}}},
                         {"tokens", {{"prompt", prompt_tokens}, {"generated", generated_tokens}}},
                         {"steps", {{"count", steps}, {"seconds", step_seconds}}},
                         {"tokens_per_s",
                          {{"prefill", prefill_tokens_per_s},
                           {"decode", decode_tokens_per_s},
                           {"generation", generation_tokens_per_s}}},
                         {"tiers",
                          {{"dram", {{"resident_bytes", dram_resident_bytes}}},
                           {"nvme",
                            {{"streamed_bytes", nvme_streamed_bytes},
                             {"gbps", nvme_gbps},
                             {"read_seconds", nvme_read_seconds},
                             {"read_gbps", nvme_read_gbps}}}}},
                         {"weight_wait_seconds", weight_wait_seconds},
                         {"overlap_ratio", overlap_ratio},
                         {"bound",
                          {{"kind", bound},
                           {"predicted_decode_tokens_per_s", predicted_decode_tokens_per_s},
                           {"percent_reached", percent_of_bound}}}};
  if (experts.steps > 0) {
    json["experts"] = {{"steps", experts.steps},
                       {"used", experts.experts_used},
                       {"total", experts.experts_total},
                       {"bytes_moved", experts.bytes_moved},
                       {"bytes_if_all_moved", experts.bytes_dense}};
  }
  return json;
}

}  // namespace zinf::cli
