// Tests for the --plot file: refused up front when it cannot be written, and a real PNG through
// librsvg and cairo.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cmd/bench_plot.h"
#include "cmd/plot_file.h"
#include "cmd/png_writer.h"
#include "engine/error.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::cli {

namespace {

std::string ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

std::vector<BenchRow> Rows() {
  std::vector<BenchRow> rows;
  for (int batch : {1, 4, 16}) {
    BenchRow row;
    row.weights = "resident";
    row.batch_size = batch;
    row.repeats = 1;
    row.decode_tokens_per_s = {100.0 * batch, 0};
    row.predicted_decode_tokens_per_s = 150.0 * batch;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("plot file: a bad extension or an unwritable place is refused, naming --plot") {
  const std::string dir = testing::MakeTempDir("plot-path");
  CHECK_NOTHROW(CheckPlotPath(dir + "/out.svg"));
  CHECK_NOTHROW(CheckPlotPath(dir + "/out.PNG"));
  CHECK_THROWS_WITH(CheckPlotPath(dir + "/out.bmp"),
                    Catch::Contains("--plot") && Catch::Contains("must end in .svg or .png"));
  CHECK_THROWS_WITH(CheckPlotPath(dir + "/out"), Catch::Contains("--plot"));
  CHECK_THROWS_WITH(CheckPlotPath(dir + "/no/such/dir/out.png"),
                    Catch::Contains("--plot") && Catch::Contains("does not exist"));
  std::filesystem::create_directory(dir + "/taken.png");
  CHECK_THROWS_WITH(CheckPlotPath(dir + "/taken.png"), Catch::Contains("is a directory"));
}

TEST_CASE("plot file: PNG is rendered in-process at 1.5 times the SVG's size") {
  const std::string dir = testing::MakeTempDir("plot-png");
  const std::string svg = ThroughputPlotSvg(Rows(), {"model", "machine", "2025-01-31"});
  WritePlot(dir + "/plot.png", svg);
  const std::string png = ReadBytes(dir + "/plot.png");
  REQUIRE(png.size() > 1000);
  CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(png.substr(12, 4) == "IHDR");
  CHECK(BigEndian32(png, 16) == 1200);  // the SVG is 800 wide
  CHECK(BigEndian32(png, 20) >= 600);   // and a few hundred high
  CHECK(BigEndian32(png, 20) <= 1050);
  CHECK(png.size() < 150 * 1024);

  WritePlot(dir + "/plot.svg", svg);
  CHECK(ReadBytes(dir + "/plot.svg") == svg);
}

TEST_CASE("plot file: a PNG that cannot be made keeps the SVG beside it") {
  const std::string dir = testing::MakeTempDir("plot-png-bad");
  CHECK_THROWS_AS(WriteSvgAsPng("not svg", dir + "/x.png"), Error);
  CHECK_THROWS_WITH(WritePlot(dir + "/y.png", "<svg"), Catch::Contains(dir + "/y.png.svg"));
  CHECK(ReadBytes(dir + "/y.png.svg") == "<svg");
}

}  // namespace zinf::cli
