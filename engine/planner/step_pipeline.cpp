#include "engine/planner/step_pipeline.h"

#include <algorithm>
#include <cstddef>

#include "engine/weight_source.h"

namespace zinf::planner_detail {

double PipelinedStepSeconds(const std::vector<PipelineExtent>& extents, int depth) {
  // Steps walked until the ring's wrap into the next step repeats: the first starts with empty
  // buffers, the second with the first's tail prefetched, the third like every later one.
  constexpr size_t kSteps = 3;
  std::vector<double> reads;  // the streamed extents' read seconds, in the walk's order
  for (const PipelineExtent& extent : extents)
    if (extent.streamed) reads.push_back(extent.read_seconds);
  const size_t n = reads.size();
  const auto ahead = static_cast<size_t>(ReadAheadWindow(depth, static_cast<int>(n)));
  // landed[s · n + r]: when step s's read of its r-th streamed extent lands (< 0: not issued).
  // The disk reads in the order reads are issued, and the walk issues them in time order.
  std::vector<double> landed(n * kSteps, -1.0);
  double walk = 0, disk_free = 0, step_seconds = 0;
  const auto issue = [&](size_t k) {
    if (k >= landed.size() || landed[k] >= 0) return;  // past the walk, or issued already
    disk_free = std::max(disk_free, walk) + reads[k % n];
    landed[k] = disk_free;
  };
  for (size_t step = 0; step < kSteps; ++step) {
    const double step_start = walk;
    const size_t first = step * n;
    // As Model::Forward: the step's first `ahead` reads at its start (issued already by the last
    // step's wrap), then on reaching streamed extent r the read of extent (r + ahead) mod n, this
    // step's or the next's; none when that is r itself (a single streamed extent), staged already.
    for (size_t d = 0; d < ahead; ++d) issue(first + d);
    size_t r = 0;
    for (const PipelineExtent& extent : extents) {
      if (extent.streamed) {
        const size_t target = (r + ahead) % n;
        if (ahead > 0 && target != r) issue(target > r ? first + target : first + n + target);
        issue(first + r);  // Acquire reads it now if nothing prefetched it
        walk = std::max(walk, landed[first + r]);
        ++r;
      }
      walk += extent.work_seconds;
    }
    step_seconds = walk - step_start;
  }
  return step_seconds;
}

}  // namespace zinf::planner_detail
