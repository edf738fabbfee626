// Per-request token sampling and the log-probability helpers; see sampler.h for the contract.
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/error.h"
#include "engine/request_limits.h"

namespace zinf {
namespace {

struct Candidate {
  TokenId id;
  double value;  // scaled logit, then probability
};

// Larger value first, ties to the lower id: a total order, so any sort gives the same result.
bool BetterCandidate(const Candidate& a, const Candidate& b) {
  if (a.value != b.value) return a.value > b.value;
  return a.id < b.id;
}

// Index of the largest value, ties to the lowest index; NaN never wins. -1 when all are NaN.
int64_t ArgMax(std::span<const float> values) {
  int64_t best = -1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    if (best < 0 || values[i] > values[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

}  // namespace

void ValidateSamplingParams(const SamplingParams& params) {
  // The ranges and their wording live in one table (engine/request_limits.h), shared with the CLI.
  if (std::string problem = SamplingProblem(params); !problem.empty()) Fail("{}", problem);
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  ValidateSamplingParams(params_);
}

double Sampler::NextUniform() {
  // The top 53 bits of one 64-bit draw, scaled by 2^-53: exactly representable, in [0, 1).
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

TokenId Sampler::Sample(std::span<const float> logits, std::span<const TokenId> previous_tokens) {
  ZINF_CHECK(!logits.empty(), "Sample called with no logits");
  const int64_t vocab = static_cast<int64_t>(logits.size());

  std::span<const float> values = logits;
  if (params_.repetition_penalty != 1.0 && !previous_tokens.empty()) {
    penalized_.assign(logits.begin(), logits.end());
    distinct_.assign(previous_tokens.begin(), previous_tokens.end());
    std::sort(distinct_.begin(), distinct_.end());
    distinct_.erase(std::unique(distinct_.begin(), distinct_.end()), distinct_.end());
    const auto penalty = static_cast<float>(params_.repetition_penalty);
    for (TokenId id : distinct_) {
      ZINF_CHECK(id >= 0 && id < vocab, "previous token {} is outside the vocabulary of {}", id,
                 vocab);
      float& logit = penalized_[id];
      logit = logit > 0 ? logit / penalty : logit * penalty;
    }
    values = penalized_;
  }

  if (params_.temperature == 0) {
    const int64_t best = ArgMax(values);
    ZINF_CHECK(best >= 0, "every logit is NaN");
    return static_cast<TokenId>(best);
  }

  // Candidates: every token whose scaled logit is finite, in id order.
  std::vector<Candidate> candidates;
  candidates.reserve(values.size());
  for (int64_t id = 0; id < vocab; ++id) {
    const double scaled = static_cast<double>(values[id]) / params_.temperature;
    if (std::isnan(scaled) || scaled == -std::numeric_limits<double>::infinity()) continue;
    candidates.push_back({static_cast<TokenId>(id), scaled});
  }
  ZINF_CHECK(!candidates.empty(), "every logit is -inf or NaN");

  bool sorted = false;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < candidates.size()) {
    std::partial_sort(candidates.begin(), candidates.begin() + params_.top_k, candidates.end(),
                      BetterCandidate);
    candidates.resize(params_.top_k);
    sorted = true;
  }

  // Softmax over the survivors; +inf logits (rare, but possible) share the mass equally.
  double max_value = -std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) max_value = std::max(max_value, c.value);
  double sum = 0;
  for (Candidate& c : candidates) {
    if (std::isinf(max_value)) {
      c.value = c.value == max_value ? 1.0 : 0.0;
    } else {
      c.value = std::exp(c.value - max_value);
    }
    sum += c.value;
  }
  for (Candidate& c : candidates) c.value /= sum;

  if (params_.top_p < 1.0) {
    if (!sorted) std::sort(candidates.begin(), candidates.end(), BetterCandidate);
    sorted = true;
    double cumulative = 0;
    size_t keep = 0;
    while (keep < candidates.size()) {
      cumulative += candidates[keep].value;
      ++keep;
      if (cumulative >= params_.top_p) break;
    }
    candidates.resize(keep);  // keep >= 1 since candidates is non-empty
  }

  if (params_.min_p > 0) {
    double p_max = 0;
    for (const Candidate& c : candidates) p_max = std::max(p_max, c.value);
    const double threshold = params_.min_p * p_max;
    // The most likely token always survives, since min_p <= 1.
    std::erase_if(candidates, [threshold](const Candidate& c) { return c.value < threshold; });
  }

  double total = 0;
  for (const Candidate& c : candidates) total += c.value;
  const double target = NextUniform() * total;
  double cumulative = 0;
  for (const Candidate& c : candidates) {
    cumulative += c.value;
    if (target < cumulative) return c.id;
  }
  // Only reached through rounding at the very top of the range: the last token with mass.
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    if (it->value > 0) return it->id;
  }
  return candidates.front().id;
}

void LogSoftmax(std::span<const float> logits, std::vector<float>& out) {
  out.resize(logits.size());
  if (logits.empty()) return;
  double max_value = -std::numeric_limits<double>::infinity();
  for (float logit : logits) max_value = std::max(max_value, static_cast<double>(logit));
  if (!std::isfinite(max_value)) {
    // All -inf (or a +inf present): no meaningful distribution; mark everything impossible
    // except the +inf entries, which share the mass.
    const auto count = std::count(logits.begin(), logits.end(), static_cast<float>(max_value));
    for (size_t i = 0; i < logits.size(); ++i) {
      const bool winner = max_value > 0 && logits[i] == static_cast<float>(max_value);
      out[i] = winner ? static_cast<float>(-std::log(static_cast<double>(count)))
                      : -std::numeric_limits<float>::infinity();
    }
    return;
  }
  double sum = 0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max_value);
  const double log_normalizer = max_value + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) {
    out[i] = static_cast<float>(static_cast<double>(logits[i]) - log_normalizer);
  }
}

std::vector<TokenLogprob> TopLogprobs(std::span<const float> logprobs, int n) {
  const size_t count = std::min(static_cast<size_t>(std::max(n, 0)), logprobs.size());
  std::vector<TokenLogprob> all(logprobs.size());
  for (size_t i = 0; i < logprobs.size(); ++i) {
    all[i] = {static_cast<TokenId>(i), logprobs[i]};
  }
  auto better = [](const TokenLogprob& a, const TokenLogprob& b) {
    // NaN sorts last; otherwise larger first, ties to the lower id.
    const bool a_nan = std::isnan(a.logprob), b_nan = std::isnan(b.logprob);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.logprob != b.logprob) return a.logprob > b.logprob;
    return a.id < b.id;
  };
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count), all.end(),
                    better);
  all.resize(count);
  return all;
}

}  // namespace zinf
