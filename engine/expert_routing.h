// Which experts each token of a step goes to, from its router logits, as transformers computes
// it: softmax over all experts in f32, the k most probable, their weights renormalised to sum to
// 1 when the model asks. Computed on the host; the forward pass then runs each chosen expert once
// over all of its tokens.
#pragma once

#include <span>
#include <vector>

#include "engine/model_config.h"

namespace zinf {

// One expert's share of a step.
struct ExpertTokens {
  std::vector<int> rows;       // step rows routed to it, ascending
  std::vector<float> weights;  // each row's routing weight, parallel to rows
};

class StepRouting {
 public:
  // `logits` is [num_tokens, num_experts] row-major. Reuses its storage across steps.
  void Route(std::span<const float> logits, int num_tokens, const MoeConfig& moe);

  const std::vector<ExpertTokens>& experts() const { return experts_; }
  // Experts at least one token of the step goes to.
  int num_selected() const;

 private:
  std::vector<ExpertTokens> experts_;
  std::vector<float> probabilities_;  // one row's, reused
  std::vector<int> order_;            // one row's experts by probability, reused
};

}  // namespace zinf
