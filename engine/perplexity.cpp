// MeasurePerplexity: windows → steps of at most max_tokens_per_step tokens → log-softmax of the
// rows whose next token is scored, accumulated in double.
#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/error.h"

namespace zinf {

namespace {

// −log p(target) from one row of logits, in double.
double NegativeLogLikelihood(std::span<const float> logits, TokenId target) {
  double max_logit = logits[0];
  for (float v : logits) max_logit = std::max(max_logit, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max_logit);
  return max_logit + std::log(sum) - static_cast<double>(logits[target]);
}

int CountWindows(int64_t num_tokens, const PerplexityOptions& options) {
  int windows = 1;
  for (int64_t begin = 0; begin + options.context < num_tokens; begin += options.stride) ++windows;
  return windows;
}

}  // namespace

PerplexityResult MeasurePerplexity(Model& model, std::span<const TokenId> tokens,
                                   const PerplexityOptions& options,
                                   const std::function<void(int, int)>& progress) {
  const ModelLimits& limits = model.limits();
  if (tokens.size() < 2)
    Fail("perplexity needs a text of at least 2 tokens, got {}", tokens.size());
  if (options.context < 2 || options.context > limits.max_context) {
    Fail("--context {} must be between 2 and the model's context {}", options.context,
         limits.max_context);
  }
  if (options.stride < 1 || options.stride > options.context) {
    Fail("--stride {} must be between 1 and --context {}", options.stride, options.context);
  }
  const int step_tokens = std::min(limits.max_tokens_per_step, limits.logit_rows());
  const int64_t vocab = model.config().vocab_size;
  const int64_t num_tokens = static_cast<int64_t>(tokens.size());
  const int total_windows = CountWindows(num_tokens, options);

  PerplexityResult result;
  double sum_nll = 0, sum_squares = 0;
  std::vector<float> logits(static_cast<size_t>(step_tokens * vocab));
  StepBatch batch;
  int64_t scored_until = 1;  // tokens before this index are scored (token 0 never is)
  for (int64_t begin = 0;; begin += options.stride) {
    const int64_t end = std::min(begin + options.context, num_tokens);
    // Only rows up to the last one whose next token is scored need to run.
    for (int64_t chunk = begin; chunk < end - 1; chunk += step_tokens) {
      const int64_t chunk_end = std::min(chunk + step_tokens, end - 1);
      batch.Clear();
      batch.AddChunk(
          0, static_cast<int>(chunk - begin),
          tokens.subspan(static_cast<size_t>(chunk), static_cast<size_t>(chunk_end - chunk)),
          false);
      for (int64_t t = chunk; t < chunk_end; ++t) {
        if (t + 1 >= scored_until) batch.logit_rows.push_back(static_cast<int>(t - chunk));
      }
      model.Forward(batch, logits);
      result.tokens_processed += chunk_end - chunk;
      for (size_t i = 0; i < batch.logit_rows.size(); ++i) {
        const int64_t target_index = chunk + batch.logit_rows[i] + 1;
        const TokenId target = tokens[static_cast<size_t>(target_index)];
        if (target < 0 || target >= vocab) Fail("token id {} is outside the vocabulary", target);
        const double nll = NegativeLogLikelihood(
            std::span<const float>(logits).subspan(i * vocab, static_cast<size_t>(vocab)), target);
        sum_nll += nll;
        sum_squares += nll * nll;
        ++result.tokens_scored;
      }
    }
    scored_until = end;
    ++result.windows;
    if (progress) progress(result.windows, total_windows);
    if (end == num_tokens) break;
  }
  const double n = static_cast<double>(result.tokens_scored);
  result.mean_nll = sum_nll / n;
  result.perplexity = std::exp(result.mean_nll);
  const double variance = std::max(0.0, sum_squares / n - result.mean_nll * result.mean_nll);
  // d exp(m) = exp(m) dm: the perplexity's error from the mean NLL's standard error.
  result.standard_error = n > 1 ? result.perplexity * std::sqrt(variance / (n - 1)) : 0.0;
  return result;
}

}  // namespace zinf
