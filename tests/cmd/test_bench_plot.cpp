// Tests for the bench plot: a rate axis the measured lines fill (log when one would be squashed),
// bounds far above clipped and their values written out, legends in words, and the CPU's name for
// the title.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "cmd/bench_plot.h"
#include "cmd/bench_series.h"
#include "cmd/machine_description.h"

namespace zinf::cli {

namespace {

BenchRow Row(const std::string& weights, int batch, double measured, double bound) {
  BenchRow row;
  row.weights = weights;
  row.prefetch_depth = -1;
  row.batch_size = batch;
  row.prompt_len = "32";
  row.gen_len = "32";
  row.refill = "continuous";
  row.repeats = 3;
  row.decode_tokens_per_s = {measured, measured * 0.02};
  row.predicted_decode_tokens_per_s = bound;
  return row;
}

// Resident and streamed over batch 1..32, the bounds far above what was measured (the README's
// case: the plan's compute bound assumes every core at its peak).
std::vector<BenchRow> FarBoundRows() {
  std::vector<BenchRow> rows;
  for (int batch : {1, 2, 4, 8, 16, 32}) {
    rows.push_back(Row("resident", batch, 900 + 45.0 * batch, 1100.0 * batch));
  }
  for (int batch : {1, 2, 4, 8, 16, 32}) {
    rows.push_back(Row("stream", batch, 300 + 50.0 * batch, 400.0 * batch));
  }
  return rows;
}

double Attribute(const std::string& element, const std::string& name) {
  std::smatch match;
  REQUIRE(std::regex_search(element, match, std::regex(" " + name + "=\"([-0-9.]+)\"")));
  return std::stod(match[1]);
}

// The plot area's top and height, and the y of every measured point, from the SVG.
struct Drawn {
  double top = 0, height = 0;
  std::vector<double> ys;
};

Drawn MeasuredPoints(const std::string& svg) {
  Drawn drawn;
  std::smatch match;
  REQUIRE(std::regex_search(svg, match, std::regex("<rect id=\"plot-area\"[^>]*>")));
  drawn.top = Attribute(match.str(), "y");
  drawn.height = Attribute(match.str(), "height");
  const std::regex circle("<circle class=\"measured\"[^>]*>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator();
       ++it) {
    drawn.ys.push_back(Attribute(it->str(), "cy"));
  }
  return drawn;
}

}  // namespace

TEST_CASE("bench plot: the measured lines fill the plot; far bounds are clipped and written") {
  const std::vector<BenchRow> rows = FarBoundRows();
  const RateAxis axis = ChooseRateAxis(rows);
  CHECK_FALSE(axis.log);
  CHECK(axis.low == 0);
  CHECK(axis.ticks.back() == axis.high);
  CHECK(axis.high >= 2340 * 1.02);  // the highest mean + sd fits...
  CHECK(axis.high <= 2500);         // ...and sets the top, not the 35k bound
  const std::string svg = ThroughputPlotSvg(rows, {"llama-7m", "Xeon, 2 threads", "2025-01-31"});
  const Drawn drawn = MeasuredPoints(svg);
  CHECK(drawn.ys.size() == 12);
  for (double y : drawn.ys) {
    CHECK(y >= drawn.top);
    CHECK(y <= drawn.top + drawn.height);
  }
  // The highest point is in the top 15% of the plot.
  CHECK(*std::min_element(drawn.ys.begin(), drawn.ys.end()) <= drawn.top + 0.15 * drawn.height);
  CHECK(svg.find("clip-path=\"url(#plot-clip)\"") != std::string::npos);
  CHECK(svg.find("▲ 35.2k") != std::string::npos);  // resident's bound at batch 32
  CHECK(svg.find("▲ 12.8k") != std::string::npos);  // streamed's
  CHECK(svg.find("llama-7m") != std::string::npos);
  CHECK(svg.find("Xeon, 2 threads · 2025-01-31") != std::string::npos);

  // Bounds just above the data stay on the chart, whole.
  std::vector<BenchRow> close = {Row("resident", 1, 1000, 1100), Row("resident", 4, 2000, 2600)};
  CHECK(ChooseRateAxis(close).high >= 2600);
  CHECK(ThroughputPlotSvg(close, {}).find("▲") == std::string::npos);

  CHECK(ThroughputPlotSvg({}, {}).find("</svg>") != std::string::npos);  // nothing ran: still SVG
}

TEST_CASE("bench plot: a series a linear axis would squash gets a log axis instead") {
  // Resident ten times faster than streamed: on a linear axis streamed would be a flat line.
  std::vector<BenchRow> rows;
  for (int batch : {1, 2, 4, 8, 16, 32}) rows.push_back(Row("resident", batch, 400.0 * batch, 0));
  for (int batch : {1, 2, 4, 8, 16, 32}) rows.push_back(Row("stream", batch, 25.0 * batch, 0));
  const RateAxis axis = ChooseRateAxis(rows);
  REQUIRE(axis.log);
  CHECK(axis.low == Approx(20));    // a tick close below the lowest mean - sd (24.5)
  CHECK(axis.high > 13056 * 1.05);  // a little above the highest mean + sd, where no tick is near
  CHECK(axis.high < 13056 * 1.2);
  CHECK(axis.ticks == std::vector<double>{20, 50, 100, 200, 500, 1000, 2000, 5000, 10000});
  const std::string svg = ThroughputPlotSvg(rows, {});
  CHECK(svg.find("decode tokens/s (log scale)") != std::string::npos);
  CHECK(svg.find(">10k</text>") != std::string::npos);
  // Both ends of the data near the plot's ends: the lines use its whole height.
  const Drawn drawn = MeasuredPoints(svg);
  CHECK(*std::min_element(drawn.ys.begin(), drawn.ys.end()) <= drawn.top + 0.15 * drawn.height);
  CHECK(*std::max_element(drawn.ys.begin(), drawn.ys.end()) >= drawn.top + 0.85 * drawn.height);

  // One series growing 32× from batch 1 to 32: on a linear axis batch 1 would sit on the bottom.
  const std::vector<BenchRow> streamed(rows.begin() + 6, rows.end());
  CHECK(ChooseRateAxis(streamed).log);

  rows[6].decode_tokens_per_s.mean = 0;  // a zero has no place on a log axis: linear it stays
  CHECK_FALSE(ChooseRateAxis(rows).log);
}

TEST_CASE("bench plot: legends name only what differs, in words; the rest goes in the subtitle") {
  BenchSeriesSet set = GroupSeries(FarBoundRows());
  REQUIRE(set.series.size() == 2);
  CHECK(set.series[0].label == "resident");
  CHECK(set.series[1].label == "streamed");
  CHECK(set.series[0].points.size() == 6);
  CHECK(set.shared == "prefetch auto, prompt 32, gen 32, continuous refill");

  std::vector<BenchRow> rows = {Row("stream", 4, 100, 200), Row("auto", 1, 80, 90),
                                Row("stream", 1, 50, 60)};
  rows[1].prefetch_depth = 2;
  rows[1].prompt_len = "10:100";
  set = GroupSeries(rows);
  REQUIRE(set.series.size() == 2);
  CHECK(set.series[0].label == "streamed, prefetch auto, prompt 32");
  CHECK(set.series[1].label == "placed by the plan, prefetch 2, prompt 10–100");
  CHECK(set.series[0].points.front()->batch_size == 1);  // sorted by batch size
  CHECK(set.shared == "gen 32, continuous refill");

  set = GroupSeries({Row("resident", 1, 10, 20)});  // one series: still named
  CHECK(set.series[0].label == "resident");
  CHECK(set.shared == "prefetch auto, prompt 32, gen 32, continuous refill");

  const std::string svg = ThroughputPlotSvg(FarBoundRows(), {});
  CHECK(svg.find(">streamed</text>") != std::string::npos);
  CHECK(svg.find("prefetch auto, prompt 32, gen 32, continuous refill · mean ± sd of 3 runs") !=
        std::string::npos);
  CHECK(svg.find("d-1") == std::string::npos);
}

TEST_CASE("plot title: the CPU model from /proc/cpuinfo, without trademark marks") {
  CHECK(CpuModelName("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) "
                     "Xeon(R) Platinum 8375C CPU @ 2.90GHz\nmodel name\t: other\n") ==
        "Intel Xeon Platinum 8375C @ 2.90GHz");
  CHECK(CpuModelName("model name\t: AMD EPYC 7B13 64-Core Processor\n") ==
        "AMD EPYC 7B13 64-Core Processor");
  CHECK(CpuModelName("processor\t: 0\nBogoMIPS\t: 50.00\n").empty());  // ARM: none given
  CHECK_FALSE(CpuModelName().empty());
}

}  // namespace zinf::cli
