// Per-request token sampling (greedy, temperature, top-k, top-p, min-p, repetition penalty) and the
// log-probability helpers behind --logprobs.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/request.h"
#include "engine/tokenizer.h"

namespace zinf {

// Throws zinf::Error naming the first invalid field: temperature >= 0, top_k >= 0,
// top_p in (0, 1], min_p in [0, 1], repetition_penalty > 0 (all finite); engine/request_limits.h
// holds the ranges.
void ValidateSamplingParams(const SamplingParams& params);

// Chooses the next token of one request. Each request owns its Sampler, seeded from
// params.seed, so the tokens a request gets do not depend on which batch it lands in or on the
// order requests are sampled. Results are bit-identical across standard libraries: uniforms are
// derived from std::mt19937_64 by hand, and every ordering breaks ties by token id.
//
// Ownership: holds only its parameters, its RNG and scratch buffers.
// Thread-safety: not thread-safe; distinct Samplers may be used from distinct threads.
// Failure: the constructor throws zinf::Error on invalid params; Sample checks (ZINF_CHECK) that
// logits are non-empty and previous tokens are inside the vocabulary.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // logits: [vocab], f32, raw model output for the next position.
  // previous_tokens: prompt plus tokens generated so far (for the repetition penalty).
  // Order of operations: repetition penalty, then (temperature 0) argmax with ties to the lowest
  // id and no RNG consumed; otherwise / temperature, top_k, softmax, top_p, min_p, renormalise,
  // draw one uniform.
  TokenId Sample(std::span<const float> logits, std::span<const TokenId> previous_tokens);

  const SamplingParams& params() const { return params_; }

 private:
  // A uniform double in [0, 1) with 53 random bits, identical on every standard library.
  double NextUniform();

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<float> penalized_;   // [vocab] scratch: logits after the repetition penalty
  std::vector<TokenId> distinct_;  // scratch: previous tokens, sorted and deduplicated
};

// out[i] = log softmax(logits)[i], accumulated in double. out is resized to logits.size().
void LogSoftmax(std::span<const float> logits, std::vector<float>& out);

// The n largest log-probabilities, best first, ties to the lowest id; n is clamped to
// [0, logprobs.size()].
std::vector<TokenLogprob> TopLogprobs(std::span<const float> logprobs, int n);

}  // namespace zinf
