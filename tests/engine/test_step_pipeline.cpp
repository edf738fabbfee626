// The CPU planner's walk of a step through the staging ring (engine/planner/step_pipeline.h).
#include <catch2/catch.hpp>

#include <vector>

#include "engine/planner/step_pipeline.h"

namespace zinf::planner_detail {
namespace {

PipelineExtent Streamed(double read, double work) { return {true, read, work}; }
PipelineExtent Resident(double work) { return {false, 0, work}; }

}  // namespace

TEST_CASE("step pipeline: the step is its reads or its work when either clearly binds") {
  const std::vector<PipelineExtent> resident = {Resident(1), Resident(2), Resident(0.5)};
  CHECK(PipelinedStepSeconds(resident, 1) == Approx(3.5));
  // Disk-bound: every read is queued before the one ahead of it lands.
  const std::vector<PipelineExtent> disk = {Streamed(1, 0.5), Streamed(1, 0.5), Resident(0.2),
                                            Streamed(1, 0.5)};
  CHECK(PipelinedStepSeconds(disk, 1) == Approx(3));
  // Work-bound: each read lands while the extent before it computes.
  const std::vector<PipelineExtent> work = {Streamed(0.5, 1), Streamed(0.5, 1), Streamed(0.5, 1)};
  CHECK(PipelinedStepSeconds(work, 1) == Approx(3));
}

TEST_CASE("step pipeline: without prefetching each read waits for the walk") {
  const std::vector<PipelineExtent> extents = {Streamed(1, 0.5), Resident(0.25), Streamed(2, 1)};
  CHECK(PipelinedStepSeconds(extents, 0) == Approx(1 + 0.5 + 0.25 + 2 + 1));
}

TEST_CASE("step pipeline: uneven stretches cost a shallow ring, a deeper one absorbs them") {
  // Reads and work balance over the step (4 s each), but two streamed extents with no work come
  // before a resident stretch of 4 s: the disk idles through that stretch once the reads queued
  // ahead of it land, one read fewer each level deeper (n − 1 = 3 at most: Forward's window).
  const std::vector<PipelineExtent> extents = {Streamed(1, 0), Streamed(1, 0), Resident(2),
                                               Resident(2),    Streamed(1, 0), Streamed(1, 0)};
  CHECK(PipelinedStepSeconds(extents, 1) == Approx(7));
  CHECK(PipelinedStepSeconds(extents, 2) == Approx(6));
  CHECK(PipelinedStepSeconds(extents, 3) == Approx(5));
  CHECK(PipelinedStepSeconds(extents, 4) == Approx(5));
}

TEST_CASE("step pipeline: a window past the step's reads is as deep as they allow") {
  // Two streamed extents: Forward reads at most one ahead (a second would be the extent it is
  // acquiring, staged already), so depth 2 walks as depth 1 does, the next step's first read
  // overlapping the resident stretch.
  const std::vector<PipelineExtent> extents = {Streamed(1, 0.5), Streamed(1, 0.5), Resident(2)};
  CHECK(PipelinedStepSeconds(extents, 1) == Approx(3.5));
  CHECK(PipelinedStepSeconds(extents, 2) == Approx(3.5));
  CHECK(PipelinedStepSeconds(extents, 0) == Approx(5));
}

}  // namespace zinf::planner_detail
