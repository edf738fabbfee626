// Shared planner pieces (engine/planner/planner_detail.h).
#include "engine/planner/planner_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace zinf::planner_detail {

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

uint64_t LargestOn(const std::vector<ExtentInfo>& extents, const std::vector<Tier>& placement,
                   Tier tier) {
  uint64_t largest = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    if (placement[i] == tier) largest = std::max(largest, extents[i].padded_bytes);
  }
  return largest;
}

std::vector<uint64_t> DistinctSizes(const std::vector<ExtentInfo>& extents,
                                    const std::vector<size_t>& order) {
  std::vector<uint64_t> sizes;
  for (size_t idx : order) {
    const uint64_t bytes = extents[idx].padded_bytes;
    if (sizes.empty() || sizes.back() != bytes) sizes.push_back(bytes);
  }
  return sizes;
}

RingBytes RingOf(const std::vector<ExtentInfo>& extents, int buffers, Tier tier) {
  return [&extents, buffers, tier](const std::vector<Tier>& placement) {
    return buffers * LargestOn(extents, placement, tier);
  };
}

std::optional<uint64_t> KeepGreedily(const std::vector<ExtentInfo>& extents,
                                     const std::vector<size_t>& order, uint64_t cap,
                                     const RingBytes& ring, uint64_t room, Tier kept, Tier moved,
                                     std::vector<Tier>& placement) {
  uint64_t kept_bytes = 0;
  auto fits = [&](uint64_t bytes) { return bytes + ring(placement) <= room; };
  for (size_t idx : order) {
    if (placement[idx] != moved || extents[idx].padded_bytes <= cap) continue;
    placement[idx] = kept;
    kept_bytes += extents[idx].padded_bytes;
  }
  if (!fits(kept_bytes)) return std::nullopt;
  for (size_t idx : order) {
    if (placement[idx] != moved) continue;
    placement[idx] = kept;
    if (fits(kept_bytes + extents[idx].padded_bytes)) {
      kept_bytes += extents[idx].padded_bytes;
    } else {
      placement[idx] = moved;
    }
  }
  return kept_bytes;
}

double ParameterCount(const Checkpoint& checkpoint) {
  double count = 0;
  for (const ExtentInfo& extent : checkpoint.extents) {
    if (extent.kind == ExtentKind::kEmbedding) continue;  // a lookup, not a matmul
    for (const TensorInfo& tensor : extent.tensors)
      count += static_cast<double>(tensor.num_elements());
  }
  return count;
}

double CpuMatmulSeconds(const Checkpoint& checkpoint, int tokens, const Bandwidths& rates) {
  double seconds = 0;
  for (const ExtentInfo& extent : checkpoint.extents) {
    if (extent.kind == ExtentKind::kEmbedding) continue;
    for (const TensorInfo& tensor : extent.tensors) {
      seconds += 2.0 * static_cast<double>(tensor.num_elements()) * tokens /
                 (rates.GflopsFor(tensor.dtype) * 1e9);
    }
  }
  return seconds;
}

}  // namespace zinf::planner_detail
