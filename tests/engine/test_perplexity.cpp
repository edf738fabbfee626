// MeasurePerplexity against per-token log-likelihoods computed one prefix at a time, and the
// int8 KV cache's effect on outputs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "engine/error.h"
#include "tests/engine/harness.h"

namespace zinf::testing {

namespace {

std::vector<TokenId> StoryTokens() {
  const std::string text =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her friends. One day, she saw a big red ball under a tree. She ran to get it, "
      "but a small dog took the ball and ran away. Lily laughed and followed the dog home.";
  return Stories260K().tokenizer->Encode(text, /*add_special=*/true);
}

double NegativeLogLikelihood(const std::vector<float>& logits, TokenId target) {
  double max_logit = -1e300, sum = 0;
  for (float v : logits) max_logit = std::max(max_logit, static_cast<double>(v));
  for (float v : logits) sum += std::exp(v - max_logit);
  return max_logit + std::log(sum) - logits[target];
}

// The story's perplexity in 64-token windows every 32, the KV cache in kv_dtype.
double StoryPerplexity(DType kv_dtype) {
  PerplexityOptions options;
  options.context = 64;
  options.stride = 32;
  return Perplexity(Stories260K(), StoryTokens(), options, 16, kv_dtype).perplexity;
}

// Six greedy requests (prompts of first_length + i · length_step story tokens, 20 new tokens) with
// the KV cache in kv_dtype give the same tokens one at a time as 4 at a time in steps of
// step_tokens.
void CheckGreedyBatchInvariant(DType kv_dtype, int first_length, int length_step, int step_tokens) {
  const std::vector<TokenId> tokens = StoryTokens();
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    requests.push_back(GreedyRequest(
        std::to_string(i), {tokens.begin(), tokens.begin() + first_length + length_step * i}, 20));
  }
  EngineSettings one, many;
  one.batch_size = 1;
  one.kv_dtype = many.kv_dtype = kv_dtype;
  many.batch_size = 4;
  many.step_tokens = step_tokens;
  const std::vector<Completion> a = Generate(Stories260K(), requests, one);
  const std::vector<Completion> b = Generate(Stories260K(), requests, many);
  for (size_t i = 0; i < requests.size(); ++i) CHECK(a[i].token_ids == b[i].token_ids);
}

}  // namespace

TEST_CASE("perplexity: windows score every token once, from its window's prefix") {
  const std::vector<TokenId> tokens = StoryTokens();
  REQUIRE(tokens.size() > 60);
  PerplexityOptions options;
  options.context = 32;
  options.stride = 12;
  // The reference: token t of window [begin, begin + 32) scored from tokens [begin, t).
  double sum = 0;
  int64_t scored = 0, scored_until = 1;
  for (size_t begin = 0;; begin += options.stride) {
    const size_t end = std::min(begin + options.context, tokens.size());
    for (size_t t = std::max<size_t>(scored_until, begin + 1); t < end; ++t) {
      const std::vector<TokenId> prefix(tokens.begin() + begin, tokens.begin() + t);
      sum += NegativeLogLikelihood(LastLogits(Stories260K(), prefix), tokens[t]);
      ++scored;
    }
    scored_until = end;
    if (end == tokens.size()) break;
  }
  for (int step_tokens : {5, 32}) {
    const PerplexityResult result = Perplexity(Stories260K(), tokens, options, step_tokens);
    INFO("step tokens " << step_tokens);
    CHECK(result.tokens_scored == static_cast<int64_t>(tokens.size()) - 1);
    CHECK(result.tokens_scored == scored);
    CHECK(result.mean_nll == Approx(sum / scored).epsilon(1e-5));
    CHECK(result.perplexity == Approx(std::exp(sum / scored)).epsilon(1e-5));
    CHECK(result.standard_error > 0);
  }
}

TEST_CASE("perplexity refuses a stride or context out of range, and a 1-token text") {
  const std::vector<TokenId> tokens = StoryTokens();
  PerplexityOptions options;
  options.context = 32;
  options.stride = 33;
  CHECK_THROWS_WITH(Perplexity(Stories260K(), tokens, options, 8),
                    Catch::Matchers::Contains("--stride 33 must be between 1 and --context 32"));
  options.stride = 16;
  CHECK_THROWS_WITH(Perplexity(Stories260K(), {1}, options, 8),
                    Catch::Matchers::Contains("at least 2 tokens"));
}

TEST_CASE("int8 KV cache: perplexity within 1% of f32 KV, outputs batch-invariant") {
  const double f32 = StoryPerplexity(DType::kF32);
  const double int8 = StoryPerplexity(DType::kI8);
  CHECK(std::fabs(int8 / f32 - 1.0) < 0.01);
  CheckGreedyBatchInvariant(DType::kI8, 4, 7, 9);
}

TEST_CASE("f16 KV cache: perplexity within 0.2% of f32 KV, outputs batch-invariant") {
  const double f32 = StoryPerplexity(DType::kF32);
  const double f16 = StoryPerplexity(DType::kF16);
  CHECK(f16 != f32);  // the cache really holds rounded values
  CHECK(std::fabs(f16 / f32 - 1.0) < 0.002);
  CheckGreedyBatchInvariant(DType::kF16, 3, 6, 7);
}

}  // namespace zinf::testing
