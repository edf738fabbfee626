// How often each expert of a mixture-of-experts model is routed to, counted over real prompts
// (`zinf generate --save-routing`): the planner keeps the most used experts resident first and
// predicts a step's expert bytes from these shares instead of a uniform router's k/E.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model_config.h"

namespace zinf {

class RoutingProfile {
 public:
  RoutingProfile() = default;
  // Zero counts, one row per layer (dense layers stay empty), num_experts per sparse layer.
  explicit RoutingProfile(const ModelConfig& config);

  // Adds one step of one layer: `rows_per_expert[e]` tokens went to expert e, of `tokens`.
  void Count(int layer, const std::vector<int>& rows_per_expert, int tokens);
  // Replaces one layer's counts (a profile read from a file); `tokens` routed in all.
  void SetLayer(int layer, std::vector<uint64_t> counts, uint64_t tokens);

  // The share of a layer's tokens that go to `expert` (the layer's shares sum to k); k/E for a
  // layer that has seen no tokens.
  double TokenShare(int layer, int expert) const;
  int num_layers() const { return static_cast<int>(counts_.size()); }
  int num_experts() const { return num_experts_; }
  int experts_per_token() const { return experts_per_token_; }
  const std::vector<uint64_t>& counts(int layer) const { return counts_[layer]; }
  uint64_t tokens(int layer) const { return tokens_[layer]; }

 private:
  int num_experts_ = 0;
  int experts_per_token_ = 0;
  std::vector<std::vector<uint64_t>> counts_;  // [layer][expert]
  std::vector<uint64_t> tokens_;               // [layer]
};

}  // namespace zinf
