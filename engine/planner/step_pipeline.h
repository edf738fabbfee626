// How long a CPU decode step takes when its streamed extents are read through a ring of staging
// buffers: reads overlap the layers' work only as far ahead as the prefetch depth lets them run.
#pragma once

#include <vector>

namespace zinf::planner_detail {

struct PipelineExtent {
  bool streamed = false;    // read from disk every step (else held in DRAM)
  double read_seconds = 0;  // streamed: its read at the disk's rate
  double work_seconds = 0;  // its products and attention, and its share of the checksums
};

// Seconds of one step in steady state, `extents` in the forward pass's order. The step walks them
// in turn, each one's work starting once the previous one's has ended and, when streamed, its read
// has landed. Reads run one after another in the order they are issued, a streamed extent's when
// the walk reaches the streamed extent ReadAheadWindow(depth, n) before it (engine/model.cpp's
// Forward prefetches as it acquires, wrapping into the next step; with depth 0 each read waits for
// the walk). So the step is never shorter than its reads or its work, and longer where a stretch
// of work outlasts the reads the ring holds ahead of it (or the other way round).
double PipelinedStepSeconds(const std::vector<PipelineExtent>& extents, int depth);

}  // namespace zinf::planner_detail
