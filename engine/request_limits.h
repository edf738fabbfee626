// The allowed values of every per-request setting, in one table: the CLI checks its flags
// (--top-p) against it while parsing, the prompt file its fields ("top_p"), and the generator each
// request, so all three refuse the same values in the same words.
#pragma once

#include <cstdint>
#include <string>

#include "engine/request.h"

namespace zinf {

enum class RequestSetting : uint8_t {
  kMaxNewTokens,
  kTemperature,
  kTopK,
  kTopP,
  kMinP,
  kRepetitionPenalty,
  kLogprobs,
};

// The setting's name in a prompt file line and in messages: "max_new_tokens", "top_p", ...
const char* RequestSettingName(RequestSetting setting);

// "" when `value` is allowed, else what is wrong with it, without the setting's name, e.g.
// "must be in (0, 1] (1 means off), got 2". NaN is never allowed, nor a fraction for an integer
// setting (max_new_tokens, top_k, logprobs).
std::string RequestSettingProblem(RequestSetting setting, double value);

// The first problem among `request`'s settings as "top_p must be in (0, 1] (1 means off), got 2",
// or "" when every one is allowed. logprobs -1 (none) is allowed here: it is the absent value.
std::string RequestSettingsProblem(const Request& request);

// The same for the sampling settings alone.
std::string SamplingProblem(const SamplingParams& params);

}  // namespace zinf
