#include "engine/planner/step_pipeline.h"

#include <algorithm>
#include <cstddef>

namespace zinf::planner_detail {

double PipelinedStepSeconds(const std::vector<PipelineExtent>& extents, int depth) {
  // Steps walked until the ring's wrap into the next step repeats: the first starts with empty
  // buffers, the second with the first's tail prefetched, the third like every later one.
  constexpr int kSteps = 3;
  const auto num_streamed = static_cast<size_t>(
      std::count_if(extents.begin(), extents.end(), [](const auto& e) { return e.streamed; }));
  const size_t total_reads = num_streamed * kSteps;
  std::vector<double> read_seconds;  // of the k-th streamed extent walked, over all steps
  for (int step = 0; step < kSteps; ++step) {
    for (const PipelineExtent& extent : extents)
      if (extent.streamed) read_seconds.push_back(extent.read_seconds);
  }
  // issued[k]: when the read of streamed extent k was issued; the first `depth` at the start.
  std::vector<double> issued(total_reads, 0.0);
  double walk = 0, last_read_end = 0, step_start = 0, step_seconds = 0;
  size_t k = 0;  // streamed extents walked so far
  for (int step = 0; step < kSteps; ++step) {
    step_start = walk;
    for (const PipelineExtent& extent : extents) {
      if (extent.streamed) {
        if (k + depth < total_reads) issued[k + depth] = std::max(issued[k + depth], walk);
        if (depth == 0) issued[k] = walk;
        last_read_end = std::max(issued[k], last_read_end) + read_seconds[k];
        walk = std::max(walk, last_read_end);
        ++k;
      }
      walk += extent.work_seconds;
    }
    step_seconds = walk - step_start;
  }
  return step_seconds;
}

}  // namespace zinf::planner_detail
