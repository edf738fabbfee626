// RoutingProfile: counts per (layer, expert) and the shares the planner reads.
#include "engine/routing_profile.h"

#include "engine/error.h"

namespace zinf {

RoutingProfile::RoutingProfile(const ModelConfig& config)
    : num_experts_(config.moe.num_experts),
      experts_per_token_(config.moe.experts_per_token),
      counts_(config.num_layers),
      tokens_(config.num_layers, 0) {
  for (int layer = 0; layer < config.num_layers; ++layer) {
    if (config.IsMoeLayer(layer)) counts_[layer].assign(num_experts_, 0);
  }
}

void RoutingProfile::Count(int layer, const std::vector<int>& rows_per_expert, int tokens) {
  ZINF_CHECK(layer >= 0 && layer < num_layers() && rows_per_expert.size() == counts_[layer].size(),
             "routing counts for layer {} do not match the profile", layer);
  for (size_t e = 0; e < rows_per_expert.size(); ++e) counts_[layer][e] += rows_per_expert[e];
  tokens_[layer] += static_cast<uint64_t>(tokens);
}

void RoutingProfile::SetLayer(int layer, std::vector<uint64_t> counts, uint64_t tokens) {
  ZINF_CHECK(layer >= 0 && layer < num_layers() && counts.size() == counts_[layer].size(),
             "routing counts for layer {} do not match the profile", layer);
  counts_[layer] = std::move(counts);
  tokens_[layer] = tokens;
}

double RoutingProfile::TokenShare(int layer, int expert) const {
  if (layer < 0 || layer >= num_layers() || tokens_[layer] == 0 || counts_[layer].empty()) {
    return num_experts_ > 0 ? static_cast<double>(experts_per_token_) / num_experts_ : 1.0;
  }
  return static_cast<double>(counts_[layer][expert]) / static_cast<double>(tokens_[layer]);
}

}  // namespace zinf
