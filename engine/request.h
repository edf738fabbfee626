// A generation request and its result, as the scheduler sees them (file formats live in cmd/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer.h"

namespace zinf {

struct SamplingParams {
  double temperature = 0.0;         // 0: greedy
  int top_k = 0;                    // 0: off
  double top_p = 1.0;               // 1: off
  double min_p = 0.0;               // 0: off
  double repetition_penalty = 1.0;  // 1: off (CTRL-style, over prompt and generated tokens)
  uint64_t seed = 0;
};

struct Request {
  std::string id;  // as given in the prompt file, or its line number
  // The id was a JSON number in the prompt file (or is the line number): results write it back
  // as one, so ids keep their JSON type from input to output.
  bool id_is_number = false;
  int64_t line_number = 0;  // 1-based line in the prompt file, for messages
  std::vector<TokenId> prompt_ids;
  int max_new_tokens = 128;
  SamplingParams sampling;
  std::vector<std::string> stop;  // stop strings: generation ends before the first match
  bool ignore_eos = false;
  int logprobs = -1;  // -1: none; N >= 0: the chosen token's log-probability plus top N
};

enum class FinishReason : uint8_t { kStop, kLength, kEos };

inline const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kEos: return "eos";
  }
  return "?";
}

struct TokenLogprob {
  TokenId id = 0;
  float logprob = 0;
  // The token's text where it stands (after the tokens before it), when the model has a
  // tokenizer. A byte-fallback token may hold part of a UTF-8 character.
  std::optional<std::string> token;
};

struct StepLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // best first
};

struct Completion {
  std::string id;
  bool id_is_number = false;  // as Request::id_is_number
  std::string text;           // generated text, without the stop string
  // Generated tokens: EOS included when it ended the request; when a stop string did, only the
  // tokens wholly before it (so text == detokenize(token_ids) when it began at a token boundary).
  std::vector<TokenId> token_ids;
  FinishReason finish_reason = FinishReason::kLength;
  int prompt_tokens = 0;
  std::vector<StepLogprobs> logprobs;  // one per generated token when requested
};

}  // namespace zinf
