// The progress line and the end-of-run summary read right: counts, rates, durations, ETA, sizes in
// the unit that fits, real tier names, and a bound that is a bound.
#include <catch2/catch.hpp>

#include "cmd/generate_progress.h"
#include "cmd/run_metrics.h"

namespace zinf::cli {

TEST_CASE("durations read as a person writes them") {
  CHECK(FormatDuration(0) == "0.0s");
  CHECK(FormatDuration(3.24) == "3.2s");
  CHECK(FormatDuration(45) == "45s");
  CHECK(FormatDuration(725) == "12m05s");
  CHECK(FormatDuration(3 * 3600 + 12 * 60 + 30) == "3h12m");
  CHECK(FormatDuration(2 * 86400 + 4 * 3600 + 59) == "2d04h");
}

TEST_CASE("the progress line: requests done of total, rates, elapsed and an ETA") {
  ProgressSnapshot snapshot;
  snapshot.total = 5000;
  snapshot.elapsed_seconds = 600;
  snapshot.generation_tokens_per_s = 512.3;
  snapshot.prefill_tokens_per_s = 20480;
  CHECK(FormatProgress(snapshot) ==
        "0/5000 requests | gen 512 tok/s, prefill 20.5k tok/s | 10m00s elapsed, ETA --");
  snapshot.done = 1000;
  snapshot.failed = 3;
  // 1000 requests in 10 minutes: 4000 more take 40.
  CHECK(FormatProgress(snapshot) ==
        "1000/5000 requests (3 failed) | gen 512 tok/s, prefill 20.5k tok/s | 10m00s elapsed, "
        "ETA 40m00s");
  // With the tokens left known, the ETA follows them: 1.5M tokens at 20,992 tokens/s.
  snapshot.remaining_tokens = 1.5e6;
  CHECK(FormatProgress(snapshot).ends_with("ETA 1m11s"));
  snapshot.done = 5000;
  CHECK(FormatProgress(snapshot).ends_with(", done"));
}

TEST_CASE("the summary counts outcomes, names tiers and never claims more than 100% of a bound") {
  RunMetrics m;
  m.seconds = 125;
  m.completed = 2;
  m.failed = 2;
  m.skipped = 7;
  m.decode_tokens_per_s = 80;
  m.predicted_decode_tokens_per_s = 100;
  m.percent_of_bound = 80;
  m.bound = "disk";
  m.dram_resident_bytes = 3 * 1024 * 1024 + 512 * 1024;
  m.nvme_streamed_bytes = 21170ull * 1024 * 1024;
  std::string line = m.SummaryLine();
  INFO(line);
  CHECK(line.starts_with("finished: 2 succeeded, 2 failed, 7 skipped (already in the output) in "
                         "2m05s"));
  CHECK(line.find("weights: 3.50 MiB resident in DRAM, 20.7 GiB streamed from disk") !=
        std::string::npos);
  CHECK(line.find("decode at 80% of the plan's disk-bound 100.0 tok/s") != std::string::npos);
  // A few percent past the plan is within its rates' spread: still a share.
  m.decode_tokens_per_s = 103;
  m.percent_of_bound = 103;
  CHECK_THAT(m.SummaryLine(), Catch::Contains("decode at 103% of the plan's disk-bound 100.0"));

  m.interrupted = true;
  m.decode_tokens_per_s = 119;
  m.percent_of_bound = 119;
  m.nvme_streamed_bytes = 0;
  line = m.SummaryLine();
  CHECK(line.starts_with("interrupted: "));
  CHECK(line.find("streamed") == std::string::npos);  // nothing streamed: nothing said
  CHECK(line.find("119%") == std::string::npos);
  CHECK(line.find("beat the plan's disk-bound 100.0 tok/s") != std::string::npos);
}

}  // namespace zinf::cli
