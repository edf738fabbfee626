// The per-request settings' ranges and their wording; see request_limits.h.
#include "engine/request_limits.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace zinf {

namespace {

bool IsInteger(double value) { return std::isfinite(value) && value == std::floor(value); }

// Integer settings are ints in Request; anything past INT_MAX could not be stored.
bool FitsInt(double value) { return value <= std::numeric_limits<int>::max(); }

// RequestSettingProblem with the setting's name in front, as a whole sentence.
std::string NamedProblem(RequestSetting setting, double value) {
  std::string problem = RequestSettingProblem(setting, value);
  return problem.empty() ? problem : fmt::format("{} {}", RequestSettingName(setting), problem);
}

}  // namespace

const char* RequestSettingName(RequestSetting setting) {
  switch (setting) {
    case RequestSetting::kMaxNewTokens: return "max_new_tokens";
    case RequestSetting::kTemperature: return "temperature";
    case RequestSetting::kTopK: return "top_k";
    case RequestSetting::kTopP: return "top_p";
    case RequestSetting::kMinP: return "min_p";
    case RequestSetting::kRepetitionPenalty: return "repetition_penalty";
    case RequestSetting::kLogprobs: return "logprobs";
  }
  return "?";
}

std::string RequestSettingProblem(RequestSetting setting, double value) {
  // Each check is written as !(allowed) so that NaN fails it.
  switch (setting) {
    case RequestSetting::kMaxNewTokens:
      if (!(IsInteger(value) && value >= 1 && FitsInt(value))) {
        return fmt::format("must be an integer >= 1 (tokens generated at most), got {}", value);
      }
      break;
    case RequestSetting::kTemperature:
      if (!(value >= 0 && std::isfinite(value))) {
        return fmt::format("must be a finite number >= 0 (0 means greedy), got {}", value);
      }
      break;
    case RequestSetting::kTopK:
      if (!(IsInteger(value) && value >= 0 && FitsInt(value))) {
        return fmt::format("must be an integer >= 0 (0 means off), got {}", value);
      }
      break;
    case RequestSetting::kTopP:
      if (!(value > 0 && value <= 1)) {
        return fmt::format("must be in (0, 1] (1 means off), got {}", value);
      }
      break;
    case RequestSetting::kMinP:
      if (!(value >= 0 && value <= 1)) {
        return fmt::format("must be in [0, 1] (0 means off), got {}", value);
      }
      break;
    case RequestSetting::kRepetitionPenalty:
      if (!(value > 0 && std::isfinite(value))) {
        return fmt::format("must be a finite number > 0 (1 means off), got {}", value);
      }
      break;
    case RequestSetting::kLogprobs:
      if (!(IsInteger(value) && value >= 0 && FitsInt(value))) {
        return fmt::format("must be an integer >= 0 (how many top alternatives to list beside "
                           "the chosen token), got {}",
                           value);
      }
      break;
  }
  return "";
}

std::string SamplingProblem(const SamplingParams& params) {
  const std::pair<RequestSetting, double> checks[] = {
      {RequestSetting::kTemperature, params.temperature},
      {RequestSetting::kTopK, params.top_k},
      {RequestSetting::kTopP, params.top_p},
      {RequestSetting::kMinP, params.min_p},
      {RequestSetting::kRepetitionPenalty, params.repetition_penalty},
  };
  for (const auto& [setting, value] : checks) {
    std::string problem = NamedProblem(setting, value);
    if (!problem.empty()) return problem;
  }
  return "";
}

std::string RequestSettingsProblem(const Request& request) {
  std::string problem = NamedProblem(RequestSetting::kMaxNewTokens, request.max_new_tokens);
  if (problem.empty()) problem = SamplingProblem(request.sampling);
  if (problem.empty() && request.logprobs != -1) {
    problem = NamedProblem(RequestSetting::kLogprobs, request.logprobs);
  }
  return problem;
}

}  // namespace zinf
