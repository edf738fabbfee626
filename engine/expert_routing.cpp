// StepRouting: softmax → top-k → optional renormalisation, per token, then grouped by expert.
#include "engine/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/error.h"

namespace zinf {

void StepRouting::Route(std::span<const float> logits, int num_tokens, const MoeConfig& moe) {
  const int num_experts = moe.num_experts;
  const int k = moe.experts_per_token;
  ZINF_CHECK(logits.size() >= static_cast<size_t>(num_tokens) * num_experts,
             "{} router logits for {} tokens x {} experts", logits.size(), num_tokens, num_experts);
  experts_.resize(num_experts);
  for (ExpertTokens& expert : experts_) {
    expert.rows.clear();
    expert.weights.clear();
  }
  probabilities_.resize(num_experts);
  order_.resize(num_experts);
  for (int row = 0; row < num_tokens; ++row) {
    const float* row_logits = logits.data() + static_cast<size_t>(row) * num_experts;
    const float max_logit = *std::max_element(row_logits, row_logits + num_experts);
    float sum = 0;
    for (int e = 0; e < num_experts; ++e) {
      probabilities_[e] = std::exp(row_logits[e] - max_logit);
      sum += probabilities_[e];
    }
    for (float& p : probabilities_) p /= sum;
    // The k most probable, ties to the lower index (a stable order), as torch.topk picks them.
    std::iota(order_.begin(), order_.end(), 0);
    std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), [&](int a, int b) {
      return probabilities_[a] > probabilities_[b] ||
             (probabilities_[a] == probabilities_[b] && a < b);
    });
    float chosen_sum = 0;
    for (int i = 0; i < k; ++i) chosen_sum += probabilities_[order_[i]];
    for (int i = 0; i < k; ++i) {
      ExpertTokens& expert = experts_[order_[i]];
      expert.rows.push_back(row);
      const float p = probabilities_[order_[i]];
      expert.weights.push_back(moe.normalize_top_k ? p / chosen_sum : p);
    }
  }
}

int StepRouting::num_selected() const {
  return static_cast<int>(std::count_if(experts_.begin(), experts_.end(),
                                        [](const ExpertTokens& e) { return !e.rows.empty(); }));
}

}  // namespace zinf
