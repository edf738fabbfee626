// Results of `zinf bench`: one row per configuration, written as a markdown table, CSV or JSON.
#pragma once

#include <string>
#include <vector>

namespace zinf::cli {

// A measured quantity over repeated runs.
struct Stat {
  double mean = 0;
  double sd = 0;  // sample standard deviation; 0 with one run
};
Stat Summarize(const std::vector<double>& values);

struct BenchRow {
  // The configuration.
  std::string weights;  // auto, resident, stream
  int prefetch_depth = 0;
  int batch_size = 0;
  bool auto_batch = false;  // chosen by --batch-size auto
  std::string prompt_len;   // "N" or a range "A:B"
  std::string gen_len;
  std::string refill;
  int repeats = 0;
  // Measured, over the repeats.
  Stat prefill_tokens_per_s;     // prompt tokens ÷ time of steps that carried prompt tokens
  Stat decode_tokens_per_s;      // generated tokens ÷ time of the steps that only decoded
  Stat generation_tokens_per_s;  // FlexGen's metric: generated tokens ÷ whole run time
  Stat disk_gbps;                // bytes read from the weights file ÷ run time
  // Sequences a decode-only step carried on average: below the batch when prefill was spread over
  // steps (the sequences start decoding at different steps) or when they finish at different steps.
  Stat decode_batch;
  // From the plan of this configuration.
  double predicted_decode_tokens_per_s = 0;
  std::string bound;
  double percent_of_bound = 0;  // decode tok/s ÷ predicted
  // A GPU run that moves weights over PCIe every step (zero otherwise).
  double pinned_h2d_gbps = 0;            // cudaMemcpy from page-locked memory, measured at start
  double moved_bytes_per_step = 0;       // weights not held in device memory: N·B/(P·b)'s P·b
  Stat h2d_gbps;                         // streamed bytes ÷ the copy engine's time copying them
  Stat copy_busy_percent;                // the copy engine's time copying ÷ run time
  double stream_bound_tokens_per_s = 0;  // decode batch × pinned rate ÷ moved bytes per step
  double percent_of_stream_bound = 0;    // decode tok/s ÷ that bound
};

// Fills stream_bound_tokens_per_s and percent_of_stream_bound from the decode batch (the batch
// when unmeasured), the pinned rate, the moved bytes and decode tok/s: ZeRO-Inference's N·B/(P·b),
// the most tokens/s a step of N sequences can give when it must move P·b bytes over a link of B
// bytes/s (left zero for runs that move nothing).
void FillStreamBound(BenchRow& row);

std::string MarkdownTable(const std::vector<BenchRow>& rows);
std::string Csv(const std::vector<BenchRow>& rows);
std::string Json(const std::vector<BenchRow>& rows);

}  // namespace zinf::cli
