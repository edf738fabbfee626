// The per-request settings' ranges (engine/request_limits.h): one table for the CLI's flags, the
// prompt file's fields and the generator's check.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "engine/request_limits.h"

namespace zinf {
namespace {

bool Allowed(RequestSetting setting, double value) {
  return RequestSettingProblem(setting, value).empty();
}

TEST_CASE("each setting's range, NaN refused everywhere", "[request_limits]") {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  using S = RequestSetting;
  CHECK(Allowed(S::kMaxNewTokens, 1));
  CHECK_FALSE(Allowed(S::kMaxNewTokens, 0));
  CHECK_FALSE(Allowed(S::kMaxNewTokens, 2.5));
  CHECK_FALSE(Allowed(S::kMaxNewTokens, 3e9));  // past INT_MAX
  CHECK(Allowed(S::kTemperature, 0));
  CHECK(Allowed(S::kTemperature, 1.7));
  CHECK_FALSE(Allowed(S::kTemperature, -0.1));
  CHECK_FALSE(Allowed(S::kTemperature, inf));
  CHECK(Allowed(S::kTopK, 0));
  CHECK_FALSE(Allowed(S::kTopK, -1));
  CHECK(Allowed(S::kTopP, 1));
  CHECK(Allowed(S::kTopP, 1e-9));
  CHECK_FALSE(Allowed(S::kTopP, 0));
  CHECK_FALSE(Allowed(S::kTopP, 1.01));
  CHECK(Allowed(S::kMinP, 0));
  CHECK(Allowed(S::kMinP, 1));
  CHECK_FALSE(Allowed(S::kMinP, -0.01));
  CHECK(Allowed(S::kRepetitionPenalty, 1.3));
  CHECK_FALSE(Allowed(S::kRepetitionPenalty, 0));
  CHECK_FALSE(Allowed(S::kRepetitionPenalty, inf));
  CHECK(Allowed(S::kLogprobs, 0));
  CHECK_FALSE(Allowed(S::kLogprobs, -1));
  for (S setting : {S::kMaxNewTokens, S::kTemperature, S::kTopK, S::kTopP, S::kMinP,
                    S::kRepetitionPenalty, S::kLogprobs}) {
    INFO(RequestSettingName(setting));
    CHECK_FALSE(Allowed(setting, nan));
  }
  CHECK(RequestSettingProblem(S::kTopP, 2) == "must be in (0, 1] (1 means off), got 2");
}

TEST_CASE("a request's first bad setting is named", "[request_limits]") {
  Request request;
  CHECK(RequestSettingsProblem(request).empty());  // the defaults, logprobs -1 (none) included
  request.sampling.min_p = 2;
  request.max_new_tokens = 0;
  CHECK(RequestSettingsProblem(request) ==
        "max_new_tokens must be an integer >= 1 (tokens generated at most), got 0");
  request.max_new_tokens = 5;
  CHECK(RequestSettingsProblem(request) == "min_p must be in [0, 1] (0 means off), got 2");
  request.sampling.min_p = 0;
  request.logprobs = -2;
  CHECK_THAT(RequestSettingsProblem(request),
             Catch::StartsWith("logprobs must be an integer >= 0"));
}

}  // namespace
}  // namespace zinf
