// The GPU weight-streaming ring's ordering, replayed on simulated copy and compute streams: no
// copy overwrites a slot before its reader finished, every compute reads its own copy, and with
// two or more slots copies overlap compute so a step takes about max(copies, computes).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "cuda/host/slot_ring.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace {

struct Timeline {
  double total = 0;         // when the last compute ends
  double copy_busy = 0;     // sum of copy times
  double compute_busy = 0;  // sum of compute times
};

// Streams as CUDA runs them: the copy stream takes copies in issue order, each starting once the
// slot's previous reader has finished; the compute stream takes computes in order, each starting
// once its copy has landed.
Timeline Simulate(int slots, const std::vector<double>& copy_times,
                  const std::vector<double>& compute_times) {
  SlotRing ring(slots);
  std::vector<double> compute_end(copy_times.size());
  std::map<int, int64_t> reader_of_slot;  // slot → copy number of its latest reader
  double copy_free = 0, compute_free = 0;
  Timeline timeline;
  for (size_t i = 0; i < copy_times.size(); ++i) {
    const SlotUse use = ring.Next();
    REQUIRE(use.copy == static_cast<int64_t>(i));
    REQUIRE(use.slot >= 0);
    REQUIRE(use.slot < slots);
    // The copy waits for exactly the slot's latest reader: no earlier (a hazard), no later.
    const auto previous = reader_of_slot.find(use.slot);
    CHECK(use.wait_for == (previous == reader_of_slot.end() ? -1 : previous->second));
    reader_of_slot[use.slot] = use.copy;
    const double copy_start =
        std::max(copy_free, use.wait_for < 0 ? 0.0 : compute_end[use.wait_for]);
    const double copy_end = copy_start + copy_times[i];
    copy_free = copy_end;
    const double compute_start = std::max(compute_free, copy_end);
    compute_end[i] = compute_start + compute_times[i];
    compute_free = compute_end[i];
    timeline.copy_busy += copy_times[i];
    timeline.compute_busy += compute_times[i];
  }
  timeline.total = compute_free;
  return timeline;
}

}  // namespace

TEST_CASE("slot ring: round-robin slots, each copy waits for the slot's previous reader") {
  SlotRing ring(3);
  std::vector<SlotUse> uses;
  for (int i = 0; i < 7; ++i) uses.push_back(ring.Next());
  CHECK(uses[0].slot == 0);
  CHECK(uses[0].wait_for == -1);
  CHECK(uses[2].slot == 2);
  CHECK(uses[2].wait_for == -1);
  CHECK(uses[3].slot == 0);
  CHECK(uses[3].wait_for == 0);
  CHECK(uses[6].slot == 0);
  CHECK(uses[6].wait_for == 3);
  CHECK_THROWS_AS(SlotRing(1), Error);
}

TEST_CASE("slot ring: copies overlap compute; a step takes about the larger of the two") {
  const int extents = 40;
  SECTION("equal copy and compute: pipelined, not serial") {
    const Timeline t =
        Simulate(2, std::vector<double>(extents, 1.0), std::vector<double>(extents, 1.0));
    CHECK(t.total == Approx(extents + 1.0));  // one copy's latency, then one extent per unit
  }
  SECTION("copy-bound (PCIe slower than compute): the copies set the pace") {
    const Timeline t =
        Simulate(2, std::vector<double>(extents, 3.0), std::vector<double>(extents, 1.0));
    CHECK(t.total == Approx(t.copy_busy + 1.0));
  }
  SECTION("compute-bound: the computes set the pace") {
    const Timeline t =
        Simulate(2, std::vector<double>(extents, 1.0), std::vector<double>(extents, 2.5));
    CHECK(t.total == Approx(t.compute_busy + 1.0));
  }
  SECTION("jittery times: a third slot absorbs what two cannot") {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> jitter(0.2, 1.8);
    std::vector<double> copies(extents), computes(extents);
    for (int i = 0; i < extents; ++i) {
      copies[i] = jitter(rng);
      computes[i] = jitter(rng);
    }
    const Timeline two = Simulate(2, copies, computes);
    const Timeline three = Simulate(3, copies, computes);
    const double bound = std::max(two.copy_busy, two.compute_busy);
    CHECK(three.total <= two.total);
    CHECK(three.total <= 1.15 * bound);
    CHECK(two.total < 0.8 * (two.copy_busy + two.compute_busy));  // far from serial
  }
}

}  // namespace zinf::cuda
