// The bench plot as SVG; drawn by hand (axes, ticks, polylines) since a chart this plain needs no
// plotting library, and SVG is what the PNG writer renders.
#include "cmd/bench_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cmd/bench_series.h"
#include "cmd/plot_axis.h"

namespace zinf::cli {

namespace {

constexpr double kWidth = 800, kLeft = 84, kRight = 28, kPlotHeight = 330;
constexpr double kHeaderBottom = 86;  // below the title and two subtitle lines
constexpr double kBandRow = 16;       // one row of off-the-chart bound values per series
constexpr double kLegendRow = 20;
// Bounds at most this far above the highest measurement stay on the chart: the data still fills
// three quarters of it.
constexpr double kBoundsWithin = 1.3;
// A linear axis squashes a series whose highest point stays below this share of it into a band
// too thin to read its shape...
constexpr double kSquashedSeries = 1.0 / 6;
// ...and a point below this share (16 pixels of 330) into the bottom edge.
constexpr double kSquashedPoint = 1.0 / 20;
// A log axis' ends lie at least this factor beyond the data, to keep the end points off the
// frame, and at most kLogRoundOut when that reaches a tick.
constexpr double kLogMargin = 1.1, kLogRoundOut = 1.35;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Text(double x, double y, const std::string& text, const std::string& attributes = "") {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\"{}{}>{}</text>\n", x, y,
                     attributes.empty() ? "" : " ", attributes, Escape(text));
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" {}/>\n", x1, y1,
                     x2, y2, attributes);
}

// "mean ± sd of 3 runs", or nothing when configurations were repeated differently.
std::string RepeatsNote(const std::vector<BenchRow>& rows) {
  if (rows.empty()) return "";
  for (const BenchRow& r : rows) {
    if (r.repeats != rows.front().repeats) return "";
  }
  return rows.front().repeats > 1 ? fmt::format("mean ± sd of {} runs", rows.front().repeats)
                                  : "one run each";
}

}  // namespace

RateAxis ChooseRateAxis(const std::vector<BenchRow>& rows) {
  double measured = 0, bound = 0;
  for (const BenchRow& r : rows) {
    measured = std::max(measured, r.decode_tokens_per_s.mean + r.decode_tokens_per_s.sd);
    bound = std::max(bound, r.predicted_decode_tokens_per_s);
  }
  if (measured <= 0) measured = bound > 0 ? bound : 1;  // nothing measured: show the bounds
  const double top = bound <= kBoundsWithin * measured ? std::max(measured, bound) : measured;
  const std::vector<double> ticks = NiceTicks(0, top);
  RateAxis axis{ticks.front(), ticks.back(), ticks, false};
  // Log when the linear axis squashes something, and every mean is above 0 (a log axis has no
  // place for 0).
  bool squashed = false, positive = !rows.empty();
  double lowest = top;
  for (const BenchSeries& series : GroupSeries(rows).series) {
    double series_top = 0;
    for (const BenchRow* p : series.points) {
      const Stat& rate = p->decode_tokens_per_s;
      series_top = std::max(series_top, rate.mean + rate.sd);
      positive = positive && rate.mean > 0;
      squashed = squashed || rate.mean < axis.high * kSquashedPoint;
      lowest = std::min(lowest, rate.mean - rate.sd > 0 ? rate.mean - rate.sd : rate.mean);
    }
    squashed = squashed || series_top < axis.high * kSquashedSeries;
  }
  if (squashed && positive) {
    axis = {lowest / kLogMargin, top * kLogMargin, {}, true};
    // An end moves out to a 1, 2 or 5 × 10^k close by, so it has a label.
    const std::vector<double> below = NiceLogTicks(lowest / kLogRoundOut, lowest / kLogMargin);
    const std::vector<double> above = NiceLogTicks(top * kLogMargin, top * kLogRoundOut);
    if (!below.empty()) axis.low = below.back();
    if (!above.empty()) axis.high = above.front();
    axis.ticks = NiceLogTicks(axis.low, axis.high);
  }
  return axis;
}

std::string ThroughputPlotSvg(const std::vector<BenchRow>& rows, const PlotInfo& info) {
  const BenchSeriesSet set = GroupSeries(rows);
  const RateAxis axis = ChooseRateAxis(rows);
  const std::vector<double>& ticks = axis.ticks;
  const double rate_top = axis.high;
  // Series whose bound leaves the chart get a row above it for the bound's values.
  std::vector<int> band_row(set.series.size(), -1);
  int band_rows = 0;
  for (size_t s = 0; s < set.series.size(); ++s) {
    for (const BenchRow* p : set.series[s].points) {
      if (p->predicted_decode_tokens_per_s > rate_top) {
        band_row[s] = band_rows++;
        break;
      }
    }
  }
  const double plot_top = kHeaderBottom + band_rows * kBandRow + (band_rows > 0 ? 8 : 0);
  const double plot_bottom = plot_top + kPlotHeight, plot_right = kWidth - kRight;
  int min_batch = 0, max_batch = 1;
  for (const BenchRow& r : rows) {
    min_batch = min_batch == 0 ? r.batch_size : std::min(min_batch, r.batch_size);
    max_batch = std::max(max_batch, r.batch_size);
  }
  min_batch = std::max(min_batch, 1);
  // Half an octave of margin keeps the end points off the frame.
  const double margin = std::sqrt(2.0);
  const LogScale x{min_batch / margin, max_batch * margin, kLeft, plot_right};
  const LinearScale linear_y{axis.low, axis.high, plot_bottom, plot_top};
  const LogScale log_y{axis.low, axis.high, plot_bottom, plot_top};
  // On the log axis, zero and below (an error bar's low end) sit on the bottom edge. Bounds are
  // not clamped: one below the axis runs off it, clipped, rather than along its edge.
  auto y = [&](double rate) { return axis.log ? log_y(std::max(rate, axis.low)) : linear_y(rate); };
  auto bound_y = [&](double rate) { return axis.log ? log_y(rate) : linear_y(rate); };
  const double legend_top = plot_bottom + 62;
  const double height = legend_top + (set.series.size() + 1) * kLegendRow + 6;

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0} {1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, height);
  svg += fmt::format("<defs><clipPath id=\"plot-clip\"><rect x=\"{:.1f}\" y=\"{:.1f}\" "
                     "width=\"{:.1f}\" height=\"{:.1f}\"/></clipPath></defs>\n",
                     kLeft, plot_top, plot_right - kLeft, kPlotHeight);
  svg += Text(16, 26, "zinf bench — " + info.model, "font-size=\"17\" font-weight=\"bold\"");
  std::string where = info.machine;
  if (!info.date.empty()) where += (where.empty() ? "" : " · ") + info.date;
  svg += Text(16, 48, where, "font-size=\"13\" fill=\"#333\"");
  std::string conditions = set.shared;
  if (const std::string note = RepeatsNote(rows); !note.empty()) {
    conditions += (conditions.empty() ? "" : " · ") + note;
  }
  svg += Text(16, 68, conditions, "font-size=\"13\" fill=\"#333\"");

  // Grid, ticks and the frame.
  std::vector<std::string> labels = TickLabels(ticks);
  if (axis.log) std::transform(ticks.begin(), ticks.end(), labels.begin(), CompactNumber);
  for (size_t i = 0; i < ticks.size(); ++i) {
    svg += Line(kLeft, y(ticks[i]), plot_right, y(ticks[i]), "stroke=\"#e4e4e4\"");
    svg += Text(kLeft - 8, y(ticks[i]) + 4, labels[i], "text-anchor=\"end\"");
  }
  std::vector<int> batches;
  for (const BenchRow& r : rows) batches.push_back(r.batch_size);
  for (int batch : BatchTicks(batches)) {
    svg += Line(x(batch), plot_top, x(batch), plot_bottom, "stroke=\"#e4e4e4\"");
    svg += Text(x(batch), plot_bottom + 18, std::to_string(batch), "text-anchor=\"middle\"");
  }
  svg += fmt::format("<rect id=\"plot-area\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                     "height=\"{:.1f}\" fill=\"none\" stroke=\"#888\"/>\n",
                     kLeft, plot_top, plot_right - kLeft, kPlotHeight);
  svg +=
      Text((kLeft + plot_right) / 2, plot_bottom + 42, "batch size (sequences per step, log scale)",
           "text-anchor=\"middle\" font-size=\"13\"");
  const double middle = (plot_top + plot_bottom) / 2;
  svg += Text(24, middle, axis.log ? "decode tokens/s (log scale)" : "decode tokens/s",
              fmt::format("text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 24 "
                          "{:.1f})\"",
                          middle));

  for (size_t s = 0; s < set.series.size(); ++s) {
    const BenchSeries& series = set.series[s];
    const std::string color = kColors[s % std::size(kColors)];
    std::string measured, bound;
    for (const BenchRow* p : series.points) {
      measured += fmt::format("{:.1f},{:.1f} ", x(p->batch_size), y(p->decode_tokens_per_s.mean));
      if (p->predicted_decode_tokens_per_s > 0) {
        bound += fmt::format("{:.1f},{:.1f} ", x(p->batch_size),
                             bound_y(p->predicted_decode_tokens_per_s));
      }
    }
    if (!bound.empty()) {
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" "
                         "stroke-dasharray=\"7 5\" clip-path=\"url(#plot-clip)\"/>\n",
                         bound, color);
    }
    svg +=
        fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"/>\n",
                    measured, color);
    for (const BenchRow* p : series.points) {
      const double px = x(p->batch_size);
      const Stat& rate = p->decode_tokens_per_s;
      if (rate.sd > 0) {  // error bar: ± one standard deviation
        const std::string stroke = fmt::format("stroke=\"{}\" stroke-width=\"1.5\"", color);
        svg += Line(px, y(rate.mean - rate.sd), px, y(rate.mean + rate.sd), stroke);
        svg += Line(px - 4, y(rate.mean - rate.sd), px + 4, y(rate.mean - rate.sd), stroke);
        svg += Line(px - 4, y(rate.mean + rate.sd), px + 4, y(rate.mean + rate.sd), stroke);
      }
      svg += fmt::format("<circle class=\"measured\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" "
                         "fill=\"{}\" stroke=\"white\"/>\n",
                         px, y(rate.mean), color);
      if (p->auto_batch) {
        svg += Text(px + 6, y(rate.mean) - 8, "auto",
                    fmt::format("fill=\"{}\" font-size=\"11\"", color));
      }
      if (band_row[s] >= 0 && p->predicted_decode_tokens_per_s > rate_top) {
        svg += Text(px, kHeaderBottom + band_row[s] * kBandRow + 12,
                    "▲ " + CompactNumber(p->predicted_decode_tokens_per_s),
                    fmt::format("text-anchor=\"middle\" fill=\"{}\" font-size=\"11\"", color));
      }
    }
    if (band_row[s] >= 0) {
      svg += Text(kLeft - 8, kHeaderBottom + band_row[s] * kBandRow + 12, "bound",
                  fmt::format("text-anchor=\"end\" fill=\"{}\" font-size=\"11\"", color));
    }
    const double row_y = legend_top + s * kLegendRow;
    svg += Line(kLeft, row_y, kLeft + 30, row_y,
                fmt::format("stroke=\"{}\" stroke-width=\"2.5\"", color));
    svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", kLeft + 15,
                       row_y, color);
    svg += Text(kLeft + 40, row_y + 4, series.label, "font-size=\"13\"");
  }
  const double note_y = legend_top + set.series.size() * kLegendRow;
  svg += Line(kLeft, note_y, kLeft + 30, note_y,
              "stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"7 5\"");
  svg += Text(kLeft + 40, note_y + 4,
              band_rows > 0
                  ? "dashed: the plan's predicted bound (▲ its value where it runs above the "
                    "chart)"
                  : "dashed: the plan's predicted bound",
              "font-size=\"12\" fill=\"#333\"");
  return svg + "</svg>\n";
}

}  // namespace zinf::cli
