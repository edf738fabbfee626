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
  const std::vector<TokenId> tokens = StoryTokens();
  PerplexityOptions options;
  options.context = 64;
  options.stride = 32;
  const double f32 = Perplexity(Stories260K(), tokens, options, 16).perplexity;
  const double int8 = Perplexity(Stories260K(), tokens, options, 16, DType::kI8).perplexity;
  CHECK(std::fabs(int8 / f32 - 1.0) < 0.01);

  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    requests.push_back(
        GreedyRequest(std::to_string(i), {tokens.begin(), tokens.begin() + 4 + 7 * i}, 20));
  }
  EngineSettings one, many;
  one.batch_size = 1;
  one.kv_dtype = many.kv_dtype = DType::kI8;
  many.batch_size = 4;
  many.step_tokens = 9;
  const std::vector<Completion> a = Generate(Stories260K(), requests, one);
  const std::vector<Completion> b = Generate(Stories260K(), requests, many);
  for (size_t i = 0; i < requests.size(); ++i) CHECK(a[i].token_ids == b[i].token_ids);
}

TEST_CASE("f16 KV cache: perplexity within 0.2% of f32 KV, outputs batch-invariant") {
  const std::vector<TokenId> tokens = StoryTokens();
  PerplexityOptions options;
  options.context = 64;
  options.stride = 32;
  const double f32 = Perplexity(Stories260K(), tokens, options, 16).perplexity;
  const double f16 = Perplexity(Stories260K(), tokens, options, 16, DType::kF16).perplexity;
  CHECK(f16 != f32);  // the cache really holds rounded values
  CHECK(std::fabs(f16 / f32 - 1.0) < 0.002);

  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    requests.push_back(
        GreedyRequest(std::to_string(i), {tokens.begin(), tokens.begin() + 3 + 6 * i}, 20));
  }
  EngineSettings one, many;
  one.batch_size = 1;
  one.kv_dtype = many.kv_dtype = DType::kF16;
  many.batch_size = 4;
  many.step_tokens = 7;
  const std::vector<Completion> a = Generate(Stories260K(), requests, one);
  const std::vector<Completion> b = Generate(Stories260K(), requests, many);
  for (size_t i = 0; i < requests.size(); ++i) CHECK(a[i].token_ids == b[i].token_ids);
}

}  // namespace zinf::testing
