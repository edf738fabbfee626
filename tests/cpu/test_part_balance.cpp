// cpu::PartBalance with set timings: parts follow the measured speeds both ways, start on grain
// multiples, cover the range, a wild measurement moves them only within the clamp, and an empty
// part or a call on fewer threads leaves the other threads' speeds alone.
#include <catch2/catch.hpp>

#include <vector>

#include "cpu/part_balance.h"

namespace zinf {

namespace {

// One call of `count` indices cut by `balance`, where thread p takes ns_per_index[p] per index
// (plus a late start of late_ns[p]); returns the begins it was cut at.
std::vector<int64_t> SimulateCall(cpu::PartBalance& balance, int64_t count, int64_t grain,
                                  const std::vector<double>& ns_per_index,
                                  const std::vector<double>& late_ns = {}) {
  const size_t parts = ns_per_index.size();
  std::vector<int64_t> begins(parts + 1);
  balance.Split(count, grain, begins);
  std::vector<double> seconds(parts);
  for (size_t p = 0; p < parts; ++p) {
    const double late = late_ns.empty() ? 0 : late_ns[p];
    seconds[p] = (late + ns_per_index[p] * static_cast<double>(begins[p + 1] - begins[p])) * 1e-9;
  }
  balance.Record(begins, seconds);
  return begins;
}

}  // namespace

TEST_CASE("part balance: even speeds cut even parts on grain multiples") {
  cpu::PartBalance balance(4);
  for (int64_t count : {16, 100, 1000, 4096}) {
    const std::vector<int64_t> begins = SimulateCall(balance, count, 16, {1, 1, 1, 1});
    INFO("count " << count);
    CHECK(begins.front() == 0);
    CHECK(begins.back() == count);
    for (size_t p = 1; p < begins.size(); ++p) {
      CHECK(begins[p] >= begins[p - 1]);
      if (p + 1 < begins.size()) CHECK(begins[p] % 16 == 0);
    }
  }
  const std::vector<int64_t> begins = SimulateCall(balance, 4096, 16, {1, 1, 1, 1});
  CHECK(begins == std::vector<int64_t>{0, 1024, 2048, 3072, 4096});
}

TEST_CASE("part balance: a slower thread gets a smaller part, and an even one when it recovers") {
  cpu::PartBalance balance(2);
  std::vector<int64_t> begins;
  for (int call = 0; call < 100; ++call) begins = SimulateCall(balance, 4096, 16, {1, 1.5});
  // Equal finish times: 1 · a = 1.5 · (4096 − a) at a ≈ 2458.
  CHECK(begins[1] >= 2400);
  CHECK(begins[1] <= 2512);
  CHECK(balance.relative_speed(0) > balance.relative_speed(1));
  for (int call = 0; call < 100; ++call) begins = SimulateCall(balance, 4096, 16, {1, 1});
  CHECK(begins[1] == 2048);
  // A worker that starts late by a third of the work is balanced the same way.
  for (int call = 0; call < 100; ++call) begins = SimulateCall(balance, 4096, 16, {1, 1}, {0, 700});
  CHECK(begins[1] > 2200);
}

TEST_CASE("part balance: one wild measurement moves the split a little, never past the clamp") {
  cpu::PartBalance balance(2);
  SimulateCall(balance, 4096, 16, {1, 1000});  // a worker descheduled for a whole time slice
  std::vector<int64_t> begins(3);
  balance.Split(4096, 16, begins);
  CHECK(begins[1] > 2048);
  CHECK(begins[1] < 2048 + 4096 / 10);
  for (int call = 0; call < 200; ++call) SimulateCall(balance, 4096, 16, {1, 1000});
  balance.Split(4096, 16, begins);
  // No speed counts more than four times another: a fifth still goes to the worker.
  CHECK(balance.relative_speed(0) <= 4 * balance.relative_speed(1) + 1e-9);
  CHECK(begins[1] <= 4096 * 8 / 10 + 16);
}

TEST_CASE("part balance: an empty part leaves its thread's speed, the others still learn") {
  cpu::PartBalance balance(3);
  for (int call = 0; call < 30; ++call) SimulateCall(balance, 3072, 16, {1, 1, 1.5});
  const double second = balance.relative_speed(1);
  const double third = balance.relative_speed(2);
  // A skewed split of a small call: thread 1's part is empty (it starts where thread 2's does).
  const std::vector<int64_t> begins = {0, 32, 32, 48};
  for (int call = 0; call < 30; ++call)
    balance.Record(begins, std::vector<double>{32e-9, 0, 16e-9});
  CHECK(balance.relative_speed(1) == second);
  CHECK(balance.relative_speed(2) > third);  // as fast per index as thread 0 in these calls
  CHECK(balance.relative_speed(0) + balance.relative_speed(1) + balance.relative_speed(2) ==
        Approx(3.0));
}

TEST_CASE("part balance: a call on fewer threads leaves the others' speeds comparable") {
  cpu::PartBalance balance(3);
  for (int call = 0; call < 50; ++call) SimulateCall(balance, 3072, 16, {1, 1, 2});
  const double third = balance.relative_speed(2);
  CHECK(third < 0.8);
  for (int call = 0; call < 50; ++call) SimulateCall(balance, 64, 16, {1, 1});  // two parts only
  CHECK(balance.relative_speed(2) == third);
  CHECK(balance.relative_speed(0) + balance.relative_speed(1) + third == Approx(3.0));
}

}  // namespace zinf
