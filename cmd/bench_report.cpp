// Formatting of bench rows; the SVG is drawn by hand (axes, ticks, polylines) to need no library.
#include "cmd/bench_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
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

std::string SeriesName(const BenchRow& row) {
  return fmt::format("{} d{} p{} g{} {}", row.weights, row.prefetch_depth, row.prompt_len,
                     row.gen_len, row.refill);
}

}  // namespace

void FillStreamBound(BenchRow& row) {
  row.stream_bound_tokens_per_s = 0;
  row.percent_of_stream_bound = 0;
  if (row.pinned_h2d_gbps <= 0 || row.moved_bytes_per_step <= 0) return;
  row.stream_bound_tokens_per_s =
      row.batch_size * row.pinned_h2d_gbps * 1e9 / row.moved_bytes_per_step;
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
  // against the bound that rate sets when every step moves the weights not held on the device.
  out += "\n| weights | batch | moved per step GB | pinned H2D GB/s | weight stream GB/s | "
         "stream ÷ pinned | copy engine busy | bound N·B/(P·b) tok/s | decode ÷ bound |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const BenchRow& r : rows) {
    if (r.moved_bytes_per_step <= 0) continue;
    out += fmt::format(
        "| {} | {} | {:.2f} | {:.1f} | {} | {:.0f}% | {:.0f}% | {:.1f} | {:.0f}% |\n", r.weights,
        BatchCell(r), r.moved_bytes_per_step / 1e9, r.pinned_h2d_gbps, Show(r.h2d_gbps),
        100 * r.h2d_gbps.mean / r.pinned_h2d_gbps, r.copy_busy_percent.mean,
        r.stream_bound_tokens_per_s, r.percent_of_stream_bound);
  }
  return out;
}

std::string Csv(const std::vector<BenchRow>& rows) {
  std::string out =
      "weights,prefetch_depth,batch_size,prompt_len,gen_len,refill,repeats,prefill_tok_s,"
      "prefill_tok_s_sd,decode_tok_s,decode_tok_s_sd,generation_tok_s,generation_tok_s_sd,"
      "disk_gbps,predicted_decode_tok_s,bound,percent_of_bound,pinned_h2d_gbps,"
      "moved_bytes_per_step,h2d_gbps,copy_busy_percent,stream_bound_tok_s,"
      "percent_of_stream_bound\n";
  for (const BenchRow& r : rows) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.4f},{:.3f},{},{:.2f},",
        r.weights, r.prefetch_depth, r.batch_size, r.prompt_len, r.gen_len, r.refill, r.repeats,
        r.prefill_tokens_per_s.mean, r.prefill_tokens_per_s.sd, r.decode_tokens_per_s.mean,
        r.decode_tokens_per_s.sd, r.generation_tokens_per_s.mean, r.generation_tokens_per_s.sd,
        r.disk_gbps.mean, r.predicted_decode_tokens_per_s, r.bound, r.percent_of_bound);
    out += fmt::format("{:.3f},{:.0f},{:.3f},{:.2f},{:.3f},{:.2f}\n", r.pinned_h2d_gbps,
                       r.moved_bytes_per_step, r.h2d_gbps.mean, r.copy_busy_percent.mean,
                       r.stream_bound_tokens_per_s, r.percent_of_stream_bound);
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
                   {"percent_of_stream_bound", r.percent_of_stream_bound}});
  }
  return out.dump(2) + "\n";
}

std::string ThroughputPlotSvg(const std::vector<BenchRow>& rows, const std::string& title) {
  constexpr double kWidth = 760, kHeight = 440, kLeft = 90, kRight = 230, kTop = 40, kBottom = 50;
  const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  std::map<std::string, std::vector<const BenchRow*>> series;
  double max_batch = 1, max_rate = 1e-9;
  for (const BenchRow& r : rows) {
    series[SeriesName(r)].push_back(&r);
    max_batch = std::max(max_batch, static_cast<double>(r.batch_size));
    max_rate = std::max({max_rate, r.decode_tokens_per_s.mean + r.decode_tokens_per_s.sd,
                         r.predicted_decode_tokens_per_s});
  }
  max_rate *= 1.1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x = [&](double batch) { return kLeft + plot_w * batch / max_batch; };
  auto y = [&](double rate) { return kTop + plot_h * (1 - rate / max_rate); };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n",
      kWidth, kHeight, kLeft, title);
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n"
                     "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"black\"/>\n",
                     kLeft, kTop, kTop + plot_h, kLeft + plot_w);
  for (int tick = 0; tick <= 5; ++tick) {
    const double rate = max_rate * tick / 5;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLeft - 6,
                       y(rate) + 4,
                       rate >= 100 ? fmt::format("{:.0f}", rate) : fmt::format("{:.2g}", rate));
  }
  std::vector<int> batches;
  for (const BenchRow& r : rows) batches.push_back(r.batch_size);
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  for (int batch : batches) {  // ticks at the measured batch sizes
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(batch),
                       kTop + plot_h + 18, batch);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">batch size</text>\n",
                     kLeft + plot_w / 2, kHeight - 10);
  svg += fmt::format("<text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" "
                     "text-anchor=\"middle\">decode tokens/s</text>\n",
                     kTop + plot_h / 2, kTop + plot_h / 2);
  int index = 0;
  for (auto& [name, points] : series) {
    std::sort(points.begin(), points.end(),
              [](const BenchRow* a, const BenchRow* b) { return a->batch_size < b->batch_size; });
    const char* color = kColors[index % 6];
    std::string measured, bound;
    for (const BenchRow* p : points) {
      measured += fmt::format("{:.1f},{:.1f} ", x(p->batch_size), y(p->decode_tokens_per_s.mean));
      bound += fmt::format("{:.1f},{:.1f} ", x(p->batch_size), y(p->predicted_decode_tokens_per_s));
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
                         x(p->batch_size), y(p->decode_tokens_per_s.mean), color);
    }
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       measured, color);
    svg += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-dasharray=\"6 4\"/>\n", bound,
        color);
    const double legend_y = kTop + 16 + index * 34;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", kLeft + plot_w + 14,
                       legend_y, color, name);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\" font-size=\"10\">solid: measured, "
                       "dashed: bound</text>\n",
                       kLeft + plot_w + 14, legend_y + 14, color);
    ++index;
  }
  return svg + "</svg>\n";
}

}  // namespace zinf::cli
