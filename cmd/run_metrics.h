// What one generate run achieved, per tier, against its plan's bound: the stderr summary line and
// --metrics-json, so a user can tell whether slow is the hardware or the software.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "engine/generator.h"
#include "engine/model.h"
#include "engine/planner/planner.h"
#include "engine/weight_source.h"

namespace zinf::cli {

struct RunMetrics {
  double seconds = 0;
  int64_t completed = 0, failed = 0;
  int64_t skipped = 0;       // already in the output when a resumed run started
  bool interrupted = false;  // stopped by Ctrl-C / SIGTERM before the prompt file's end
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_tokens_per_s = 0;     // prompt tokens ÷ time of steps that carried prompt tokens
  double decode_tokens_per_s = 0;      // tokens generated in decode-only steps ÷ their time
  double generation_tokens_per_s = 0;  // all generated tokens ÷ the whole run
  int64_t steps = 0;
  double step_seconds = 0;           // in forward steps (prefill and decode), not start-up
  uint64_t dram_resident_bytes = 0;  // DRAM tier: read once at start
  uint64_t nvme_streamed_bytes = 0;  // NVMe tier: re-read during the run
  double nvme_gbps = 0;              // streamed bytes ÷ run time
  double nvme_read_seconds = 0;      // time with a streaming read pending
  double nvme_read_gbps = 0;         // streamed bytes ÷ that: the disk's rate as zinf drove it
  double weight_wait_seconds = 0;    // compute blocked on reads
  // Share of the streaming reads that ran behind compute: 1 - wait ÷ (streamed bytes ÷ disk rate).
  double overlap_ratio = 1;
  double predicted_decode_tokens_per_s = 0;  // the plan's bound for this run
  std::string bound;
  std::string resident_place = "DRAM";  // where resident weights live (GPU on CUDA)
  double percent_of_bound = 0;
  // Mixture-of-experts models: the experts the steps were routed to, and the expert bytes moved
  // against what moving every expert would have been (steps == 0 for a dense model).
  ExpertTraffic experts;

  std::string SummaryLine() const;
  // " | experts: ..." for the summary line; empty for a dense model.
  std::string ExpertsSummary() const;
  nlohmann::json Json() const;
};

// `load` is the weight source's stats right after construction (the resident load), `end` at the
// end of the run.
RunMetrics ComputeRunMetrics(const GenerationStats& stats, const WeightIoStats& load,
                             const WeightIoStats& end, const Plan& plan,
                             const Bandwidths& bandwidths, double seconds);

}  // namespace zinf::cli
