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
  std::string prompt_len;  // "N" or a range "A:B"
  std::string gen_len;
  std::string refill;
  int repeats = 0;
  // Measured, over the repeats.
  Stat prefill_tokens_per_s;     // prompt tokens ÷ time of steps that carried prompt tokens
  Stat decode_tokens_per_s;      // generated tokens ÷ time of the steps that only decoded
  Stat generation_tokens_per_s;  // FlexGen's metric: generated tokens ÷ whole run time
  Stat disk_gbps;                // bytes read from the weights file ÷ run time
  // From the plan of this configuration.
  double predicted_decode_tokens_per_s = 0;
  std::string bound;
  double percent_of_bound = 0;   // decode tok/s ÷ predicted
};

std::string MarkdownTable(const std::vector<BenchRow>& rows);
std::string Csv(const std::vector<BenchRow>& rows);
std::string Json(const std::vector<BenchRow>& rows);

// Decode tokens/s against batch size, one line per (weights, prefetch, prompt, gen) series, with
// each series' predicted bound dashed. SVG text.
std::string ThroughputPlotSvg(const std::vector<BenchRow>& rows, const std::string& title);

}  // namespace zinf::cli
