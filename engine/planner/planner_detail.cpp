// Shared planner pieces (engine/planner/planner_detail.h).
#include "engine/planner/planner_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <utility>

namespace zinf::planner_detail {

namespace {

// Equal layers are kept resident in the order of their indices' bits reversed (0, 64, 32, 96,
// 16, ...): any number of them then lies spread over the model, so each streamed layer's read
// overlaps the products of resident layers around it, where resident layers first left the disk
// idle while they computed.
uint32_t SpreadRank(int layer) {
  uint32_t reversed = 0;
  for (uint32_t bits = static_cast<uint32_t>(layer), i = 0; i < 16; ++i, bits >>= 1)
    reversed = (reversed << 1) | (bits & 1);
  return reversed;
}

}  // namespace

std::vector<size_t> ResidencyOrder(const std::vector<ExtentInfo>& extents,
                                   const RoutingProfile* routing) {
  std::vector<size_t> order(extents.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool a_expert = extents[a].kind == ExtentKind::kExpert;
    if (a_expert != (extents[b].kind == ExtentKind::kExpert)) return !a_expert;
    if (a_expert && routing != nullptr) {
      const double share_a = routing->TokenShare(extents[a].layer, extents[a].expert);
      const double share_b = routing->TokenShare(extents[b].layer, extents[b].expert);
      if (share_a != share_b) return share_a > share_b;
    }
    if (extents[a].padded_bytes != extents[b].padded_bytes) {
      return extents[a].padded_bytes > extents[b].padded_bytes;
    }
    // Among equals: the embeddings, then layers spread over the model, then the rest in order.
    const auto tie_key = [&](size_t i) {
      const ExtentKind kind = extents[i].kind;
      return std::pair(kind == ExtentKind::kEmbedding ? 0
                       : kind == ExtentKind::kLayer   ? 1
                                                      : 2,
                       kind == ExtentKind::kLayer ? SpreadRank(extents[i].layer) : 0u);
    };
    return tie_key(a) < tie_key(b);
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
  for (size_t idx : order) sizes.push_back(extents[idx].padded_bytes);
  // Largest first even when `order` is not by size (experts after the always-used extents).
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

RingBytes RingOf(int buffers) {
  return [buffers](uint64_t largest_moved) { return buffers * largest_moved; };
}

std::optional<uint64_t> KeepGreedily(const std::vector<ExtentInfo>& extents,
                                     const std::vector<size_t>& order, uint64_t cap,
                                     const RingBytes& ring, uint64_t room, Tier kept, Tier moved,
                                     std::vector<Tier>& placement) {
  // How many extents of each size are still on `moved`, largest first, so the ring's size is
  // known without a pass over every extent (a checkpoint has thousands of experts, few sizes).
  std::map<uint64_t, int64_t, std::greater<>> moved_sizes;
  for (size_t idx = 0; idx < extents.size(); ++idx) {
    if (placement[idx] == moved) ++moved_sizes[extents[idx].padded_bytes];
  }
  auto largest_moved = [&] { return moved_sizes.empty() ? 0 : moved_sizes.begin()->first; };
  auto keep = [&](size_t idx) {
    placement[idx] = kept;
    const auto size = moved_sizes.find(extents[idx].padded_bytes);
    if (--size->second == 0) moved_sizes.erase(size);
  };
  uint64_t kept_bytes = 0;
  for (size_t idx : order) {
    if (placement[idx] != moved || extents[idx].padded_bytes <= cap) continue;
    keep(idx);
    kept_bytes += extents[idx].padded_bytes;
  }
  if (kept_bytes + ring(largest_moved()) > room) return std::nullopt;
  for (size_t idx : order) {
    if (placement[idx] != moved) continue;
    const uint64_t bytes = extents[idx].padded_bytes;
    keep(idx);
    if (kept_bytes + bytes + ring(largest_moved()) <= room) {
      kept_bytes += bytes;
    } else {  // back on `moved`
      placement[idx] = moved;
      ++moved_sizes[bytes];
    }
  }
  return kept_bytes;
}

double StepBytes(const Checkpoint& checkpoint, const RoutingProfile* routing, size_t idx,
                 int tokens) {
  const ExtentInfo& extent = checkpoint.extents[idx];
  const double bytes = static_cast<double>(extent.padded_bytes);
  if (extent.kind != ExtentKind::kExpert) return bytes;
  // Without a profile, the uniform router's k/E (RoutedShare's formula).
  const MoeConfig& moe = checkpoint.config.moe;
  const double share = routing != nullptr
                           ? std::min(1.0, routing->TokenShare(extent.layer, extent.expert))
                           : static_cast<double>(moe.experts_per_token) / moe.num_experts;
  return bytes * (1.0 - std::pow(1.0 - share, std::max(tokens, 1)));
}

double StepBytesOn(const Checkpoint& checkpoint, const RoutingProfile* routing,
                   const std::vector<Tier>& placement, Tier tier, int tokens) {
  double bytes = 0;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    if (placement[i] == tier) bytes += StepBytes(checkpoint, routing, i, tokens);
  }
  return bytes;
}

double StepBytesUsed(const Checkpoint& checkpoint, const RoutingProfile* routing, int tokens) {
  double bytes = 0;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i)
    bytes += StepBytes(checkpoint, routing, i, tokens);
  return bytes;
}

int ExpertStagingBuffers(const ModelConfig& config, int tokens) {
  if (!config.is_moe()) return 0;
  const double routed = config.moe.num_experts * RoutedShare(config, tokens);
  return std::clamp(static_cast<int>(std::ceil(routed)), 1, 16);
}

namespace {

// The share of a step's tokens that multiply by an extent's weights.
double TokenShare(const Checkpoint& checkpoint, const ExtentInfo& extent) {
  if (extent.kind != ExtentKind::kExpert) return 1.0;
  const MoeConfig& moe = checkpoint.config.moe;
  return static_cast<double>(moe.experts_per_token) / moe.num_experts;
}

}  // namespace

double ExtentMatmulSeconds(const Checkpoint& checkpoint, const ExtentInfo& extent, int tokens,
                           const Bandwidths& rates) {
  const double rows = tokens * TokenShare(checkpoint, extent);
  double seconds = 0;
  for (const TensorInfo& tensor : extent.tensors) {
    seconds += 2.0 * static_cast<double>(tensor.num_elements()) * rows /
               (rates.GflopsFor(tensor.dtype, rows, tensor.group_size) * 1e9);
  }
  return seconds;
}

double ParameterCount(const Checkpoint& checkpoint) {
  double count = 0;
  for (const ExtentInfo& extent : checkpoint.extents) {
    if (extent.kind == ExtentKind::kEmbedding) continue;  // a lookup, not a matmul
    for (const TensorInfo& tensor : extent.tensors)
      count += static_cast<double>(tensor.num_elements()) * TokenShare(checkpoint, extent);
  }
  return count;
}

DequantWork GpuDequantWork(const Checkpoint& checkpoint, const RoutingProfile* routing,
                           const Placement& placement, int tokens, const Bandwidths& rates) {
  DequantWork work;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    const ExtentInfo& extent = checkpoint.extents[i];
    // The embedding table is a lookup: its rows are dequantised one by one, not the matrix.
    if (extent.kind == ExtentKind::kEmbedding || extent.padded_bytes == 0) continue;
    if (placement.ComputedOnHost(i, extent.kind == ExtentKind::kExpert)) continue;
    const double used =
        StepBytes(checkpoint, routing, i, tokens) / static_cast<double>(extent.padded_bytes);
    for (const TensorInfo& tensor : extent.tensors) {
      if (!IsQuantized(tensor.dtype)) continue;
      const double elements = static_cast<double>(tensor.num_elements()) * used;
      work.elements += elements;
      work.matrices += used;
      work.stored_bytes += static_cast<double>(tensor.size_bytes) * used;
      work.seconds += elements * (tensor.dtype == DType::kQ4 ? rates.gpu_dequant_q4_seconds
                                                             : rates.gpu_dequant_i8_seconds);
    }
  }
  return work;
}

double CpuMatmulSeconds(const Checkpoint& checkpoint, int tokens, const Bandwidths& rates) {
  double seconds = 0;
  for (const ExtentInfo& extent : checkpoint.extents) {
    if (extent.kind != ExtentKind::kEmbedding)
      seconds += ExtentMatmulSeconds(checkpoint, extent, tokens, rates);
  }
  return seconds;
}

double CpuAttentionSeconds(const ModelConfig& config, const Workload& workload, uint64_t kv_bytes,
                           const Bandwidths& rates) {
  const double flops = 4.0 * std::max(workload.batch_size, 1) * config.num_layers *
                       config.num_heads * workload.attended_context() * config.head_dim;
  return std::max(workload.attended_share() * kv_bytes / (rates.dram_read_gbps * 1e9),
                  flops / (rates.CpuAttentionGflops() * 1e9));
}

HostExperts HostExpertWork(const Checkpoint& checkpoint, const RoutingProfile* routing,
                           const Placement& placement, int tokens, const Bandwidths& rates) {
  HostExperts work;
  double multiply_seconds = 0;
  for (size_t i = 0; i < checkpoint.extents.size(); ++i) {
    const ExtentInfo& extent = checkpoint.extents[i];
    if (!placement.ComputedOnHost(i, extent.kind == ExtentKind::kExpert)) continue;
    work.step_bytes += StepBytes(checkpoint, routing, i, tokens);
    multiply_seconds += ExtentMatmulSeconds(checkpoint, extent, tokens, rates);
  }
  work.seconds = std::max(work.step_bytes / (rates.dram_read_gbps * 1e9), multiply_seconds);
  return work;
}

}  // namespace zinf::planner_detail

namespace zinf {

double RoutedShare(const ModelConfig& config, int tokens) {
  if (!config.is_moe()) return 1.0;
  const double unused_by_one =
      1.0 - static_cast<double>(config.moe.experts_per_token) / config.moe.num_experts;
  return 1.0 - std::pow(unused_by_one, std::max(tokens, 1));
}

}  // namespace zinf
