// Shared planner pieces (engine/planner_detail.h).
#include "engine/planner_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace zinf::planner_detail {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

std::string GiB(uint64_t bytes) {
  if (bytes >= kGiB / 2) return fmt::format("{:.2f} GiB", bytes / kGiB);
  if (bytes >= 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
  return fmt::format("{} KiB", (bytes + 1023) / 1024);
}

std::vector<size_t> ResidencyOrder(const std::vector<ExtentInfo>& extents) {
  std::vector<size_t> order(extents.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (extents[a].padded_bytes != extents[b].padded_bytes) {
      return extents[a].padded_bytes > extents[b].padded_bytes;
    }
    return extents[a].kind == ExtentKind::kEmbedding && extents[b].kind != ExtentKind::kEmbedding;
  });
  return order;
}

double ParameterCount(const Checkpoint& checkpoint) {
  double count = 0;
  for (const ExtentInfo& extent : checkpoint.extents) {
    if (extent.kind == ExtentKind::kEmbedding) continue;  // a lookup, not a matmul
    for (const TensorInfo& tensor : extent.tensors) count += static_cast<double>(tensor.num_elements());
  }
  return count;
}

}  // namespace zinf::planner_detail
