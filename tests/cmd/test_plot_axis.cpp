// Tests for cmd/plot_axis: nice ticks and their labels, and the log batch axis.
#include <catch2/catch.hpp>

#include <cmath>

#include "cmd/plot_axis.h"

namespace zinf::cli {

TEST_CASE("plot axis: ticks are 1, 2 or 5 × 10^k and cover the data") {
  CHECK(NiceTicks(0, 33044) ==
        std::vector<double>{0, 5000, 10000, 15000, 20000, 25000, 30000, 35000});
  CHECK(NiceTicks(0, 2100) == std::vector<double>{0, 500, 1000, 1500, 2000, 2500});
  const std::vector<double> fifths = NiceTicks(0, 1);
  REQUIRE(fifths.size() == 6);
  for (int i = 0; i < 6; ++i) CHECK(fifths[i] == Approx(0.2 * i));
  for (double high = 0.013; high < 1e8; high *= 1.37) {
    INFO("high " << high);
    const std::vector<double> ticks = NiceTicks(0, high);
    REQUIRE(ticks.size() >= 2);
    CHECK(ticks.size() <= 8);
    CHECK(ticks.front() == 0);
    CHECK(ticks.back() >= high * (1 - 1e-9));
    CHECK(ticks.back() <= high * 1.5);  // the data reaches at least two thirds of the axis
    const double step = ticks[1] - ticks[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    CHECK((mantissa == Approx(1) || mantissa == Approx(2) || mantissa == Approx(5)));
  }
}

TEST_CASE("plot axis: log ticks are the 1, 2, 5 × 10^k inside the axis") {
  CHECK(NiceLogTicks(24.8, 7546) == std::vector<double>{50, 100, 200, 500, 1000, 2000, 5000});
  CHECK(NiceLogTicks(100, 1000) == std::vector<double>{100, 200, 500, 1000});
  // Six decades: the 1, 2, 5 would be 18 ticks, so only the powers of ten.
  CHECK(NiceLogTicks(3, 2e6) == std::vector<double>{10, 100, 1000, 1e4, 1e5, 1e6});
  const std::vector<double> small = NiceLogTicks(0.03, 0.7);
  REQUIRE(small.size() == 4);
  CHECK(small.front() == Approx(0.05));
  CHECK(small.back() == Approx(0.5));
  CHECK(NiceLogTicks(0, 10).empty());
}

TEST_CASE("plot axis: tick labels are short, with one suffix per axis") {
  CHECK(TickLabels(NiceTicks(0, 33044)) ==
        std::vector<std::string>{"0", "5k", "10k", "15k", "20k", "25k", "30k", "35k"});
  CHECK(TickLabels(NiceTicks(0, 2100)) ==
        std::vector<std::string>{"0", "500", "1000", "1500", "2000", "2500"});
  CHECK(TickLabels(NiceTicks(0, 1)) ==
        std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1.0"});
  CHECK(TickLabels({0, 5e6, 1e7, 1.5e7}) == std::vector<std::string>{"0", "5M", "10M", "15M"});
  CHECK(TickLabels({0, 2500, 5000, 7500, 10000}) ==
        std::vector<std::string>{"0", "2.5k", "5.0k", "7.5k", "10.0k"});
  CHECK(CompactNumber(33044) == "33k");
  CHECK(CompactNumber(4581) == "4.58k");
  CHECK(CompactNumber(950) == "950");
  CHECK(CompactNumber(2.5e6) == "2.5M");
}

TEST_CASE("plot axis: batch sizes sit on a log axis, ticked where measured") {
  const LogScale x{1, 32, 100, 600};
  CHECK(x(1) == Approx(100));
  CHECK(x(2) == Approx(200));  // every doubling the same distance
  CHECK(x(4) == Approx(300));
  CHECK(x(32) == Approx(600));
  CHECK(BatchTicks({16, 1, 4, 4, 64}) == std::vector<int>{1, 4, 16, 64});
  std::vector<int> many;
  for (int b = 1; b <= 100; ++b) many.push_back(b);
  CHECK(BatchTicks(many) == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  const LinearScale y{0, 100, 400, 100};  // SVG's y grows downwards
  CHECK(y(0) == Approx(400));
  CHECK(y(50) == Approx(250));
}

}  // namespace zinf::cli
