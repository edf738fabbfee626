// Formatting of bench rows as text: the markdown table, CSV and JSON (the plot is bench_plot).
#include "cmd/bench_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace zinf::cli {

Stat Summarize(const std::vector<double>& values) {
  Stat stat;
  if (values.empty()) return stat;
  for (double v : values) stat.mean += v;
  stat.mean /= values.size();
  if (values.size() > 1) {
    double squares = 0;
    for (double v : values) squares += (v - stat.mean) * (v - stat.mean);
    stat.sd = std::sqrt(squares / (values.size() - 1));
  }
  return stat;
}

namespace {

std::string Show(const Stat& stat) { return fmt::format("{:.1f} ± {:.1f}", stat.mean, stat.sd); }

std::string BatchCell(const BenchRow& row) {
  return row.auto_batch ? fmt::format("{} (auto)", row.batch_size) : std::to_string(row.batch_size);
}

}  // namespace

void FillStreamBound(BenchRow& row) {
  row.stream_bound_tokens_per_s = 0;
  row.percent_of_stream_bound = 0;
  if (row.pinned_h2d_gbps <= 0 || row.moved_bytes_per_step <= 0) return;
  const double sequences = row.decode_batch.mean > 0 ? row.decode_batch.mean : row.batch_size;
  row.stream_bound_tokens_per_s = sequences * row.pinned_h2d_gbps * 1e9 / row.moved_bytes_per_step;
  row.percent_of_stream_bound = 100 * row.decode_tokens_per_s.mean / row.stream_bound_tokens_per_s;
}

std::string MarkdownTable(const std::vector<BenchRow>& rows) {
  std::string out =
      "| weights | prefetch | batch | prompt | gen | refill | prefill tok/s | decode tok/s | "
      "generation tok/s | disk GB/s | predicted decode tok/s | bound | % of bound |\n"
      "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|\n";
  for (const BenchRow& r : rows) {
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2f} | {:.1f} | {} | {:.0f}% |\n",
        r.weights, r.prefetch_depth, BatchCell(r), r.prompt_len, r.gen_len, r.refill,
        Show(r.prefill_tokens_per_s), Show(r.decode_tokens_per_s), Show(r.generation_tokens_per_s),
        r.disk_gbps.mean, r.predicted_decode_tokens_per_s, r.bound, r.percent_of_bound);
  }
  const bool streamed_to_gpu = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) {
    return r.pinned_h2d_gbps > 0 && r.moved_bytes_per_step > 0;
  });
  if (!streamed_to_gpu) return out;
  // The PCIe side of GPU runs: the weight stream against the link's measured rate, and decode
  // against the bound that rate sets when every step moves the weights not held on the device,
  // for as many sequences as the decode steps carried.
  out += "\n| weights | batch | decode batch | moved per step GB | pinned H2D GB/s | "
         "weight stream GB/s | stream ÷ pinned | copy engine busy | bound N·B/(P·b) tok/s | "
         "decode ÷ bound |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const BenchRow& r : rows) {
    if (r.moved_bytes_per_step <= 0) continue;
    out += fmt::format(
        "| {} | {} | {:.1f} | {:.2f} | {:.1f} | {} | {:.0f}% | {:.0f}% | {:.1f} | {:.0f}% |\n",
        r.weights, BatchCell(r), r.decode_batch.mean, r.moved_bytes_per_step / 1e9,
        r.pinned_h2d_gbps, Show(r.h2d_gbps), 100 * r.h2d_gbps.mean / r.pinned_h2d_gbps,
        r.copy_busy_percent.mean, r.stream_bound_tokens_per_s, r.percent_of_stream_bound);
  }
  return out;
}

std::string Csv(const std::vector<BenchRow>& rows) {
  std::string out =
      "weights,prefetch_depth,batch_size,prompt_len,gen_len,refill,repeats,prefill_tok_s,"
      "prefill_tok_s_sd,decode_tok_s,decode_tok_s_sd,generation_tok_s,generation_tok_s_sd,"
      "disk_gbps,predicted_decode_tok_s,bound,percent_of_bound,pinned_h2d_gbps,"
      "moved_bytes_per_step,h2d_gbps,copy_busy_percent,stream_bound_tok_s,"
      "percent_of_stream_bound,decode_batch\n";
  for (const BenchRow& r : rows) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.4f},{:.3f},{},{:.2f},",
        r.weights, r.prefetch_depth, r.batch_size, r.prompt_len, r.gen_len, r.refill, r.repeats,
        r.prefill_tokens_per_s.mean, r.prefill_tokens_per_s.sd, r.decode_tokens_per_s.mean,
        r.decode_tokens_per_s.sd, r.generation_tokens_per_s.mean, r.generation_tokens_per_s.sd,
        r.disk_gbps.mean, r.predicted_decode_tokens_per_s, r.bound, r.percent_of_bound);
    out += fmt::format("{:.3f},{:.0f},{:.3f},{:.2f},{:.3f},{:.2f},{:.2f}\n", r.pinned_h2d_gbps,
                       r.moved_bytes_per_step, r.h2d_gbps.mean, r.copy_busy_percent.mean,
                       r.stream_bound_tokens_per_s, r.percent_of_stream_bound, r.decode_batch.mean);
  }
  return out;
}

std::string Json(const std::vector<BenchRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  auto stat = [](const Stat& s) { return nlohmann::json{{"mean", s.mean}, {"sd", s.sd}}; };
  for (const BenchRow& r : rows) {
    out.push_back({{"weights", r.weights},
                   {"prefetch_depth", r.prefetch_depth},
                   {"batch_size", r.batch_size},
                   {"prompt_len", r.prompt_len},
                   {"gen_len", r.gen_len},
                   {"refill", r.refill},
                   {"repeats", r.repeats},
                   {"prefill_tok_s", stat(r.prefill_tokens_per_s)},
                   {"decode_tok_s", stat(r.decode_tokens_per_s)},
                   {"generation_tok_s", stat(r.generation_tokens_per_s)},
                   {"disk_gbps", stat(r.disk_gbps)},
                   {"predicted_decode_tok_s", r.predicted_decode_tokens_per_s},
                   {"bound", r.bound},
                   {"percent_of_bound", r.percent_of_bound},
                   {"pinned_h2d_gbps", r.pinned_h2d_gbps},
                   {"moved_bytes_per_step", r.moved_bytes_per_step},
                   {"h2d_gbps", stat(r.h2d_gbps)},
                   {"copy_busy_percent", stat(r.copy_busy_percent)},
                   {"stream_bound_tok_s", r.stream_bound_tokens_per_s},
                   {"percent_of_stream_bound", r.percent_of_stream_bound},
                   {"decode_batch", stat(r.decode_batch)}});
  }
  return out.dump(2) + "\n";
}

}  // namespace zinf::cli
