// Tests for cmd/bench_report's GPU streaming figures: the N·B/(P·b) bound and the PCIe table that
// appears only for runs that moved weights to a GPU.
#include <catch2/catch.hpp>

#include "cmd/bench_report.h"

namespace zinf::cli {

TEST_CASE("bench report: the streaming bound is decode batch × pinned rate ÷ bytes moved per step") {
  BenchRow row;
  row.batch_size = 32;
  row.pinned_h2d_gbps = 25;
  row.moved_bytes_per_step = 50e9;  // 50 GB of weights off the device: 2 s per step at 25 GB/s
  row.decode_tokens_per_s.mean = 14;
  FillStreamBound(row);
  CHECK(row.stream_bound_tokens_per_s == Approx(16.0));  // 32 tokens per 2 s step
  CHECK(row.percent_of_stream_bound == Approx(87.5));

  // Decode steps that carried 24 of the 32 sequences on average (prefill staggered over steps):
  // each such step still moves the 50 GB, for 24 tokens.
  BenchRow staggered = row;
  staggered.decode_batch.mean = 24;
  staggered.decode_tokens_per_s.mean = 10.5;
  FillStreamBound(staggered);
  CHECK(staggered.stream_bound_tokens_per_s == Approx(12.0));
  CHECK(staggered.percent_of_stream_bound == Approx(87.5));

  BenchRow cpu_row = row;
  cpu_row.pinned_h2d_gbps = 0;  // a CPU run: no link, no bound
  FillStreamBound(cpu_row);
  CHECK(cpu_row.stream_bound_tokens_per_s == 0);
  CHECK(cpu_row.percent_of_stream_bound == 0);
}

TEST_CASE("bench report: the PCIe table is printed only for GPU runs that moved weights") {
  BenchRow cpu_row;
  cpu_row.weights = "resident";
  cpu_row.batch_size = 4;
  CHECK(MarkdownTable({cpu_row}).find("pinned H2D") == std::string::npos);

  BenchRow gpu_row = cpu_row;
  gpu_row.weights = "auto";
  gpu_row.pinned_h2d_gbps = 24.6;
  gpu_row.moved_bytes_per_step = 40e9;
  gpu_row.h2d_gbps = {23.1, 0.2};
  gpu_row.copy_busy_percent = {96, 1};
  gpu_row.decode_tokens_per_s = {2.2, 0.1};
  gpu_row.decode_batch = {4, 0};
  FillStreamBound(gpu_row);
  const std::string table = MarkdownTable({cpu_row, gpu_row});
  CHECK(table.find("pinned H2D") != std::string::npos);
  CHECK(table.find("| auto | 4 | 4.0 | 40.00 | 24.6 | 23.1 ± 0.2 | 94% | 96% | 2.5 | 89% |") !=
        std::string::npos);
  CHECK(Csv({gpu_row}).find(",24.600,40000000000,23.100,96.00,2.460,89.43,4.00\n") !=
        std::string::npos);
}

}  // namespace zinf::cli
