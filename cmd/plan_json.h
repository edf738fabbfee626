// A plan as JSON: where each extent lives, the batch, staging and prediction. `zinf plan --json`
// writes it and `zinf generate --metrics-json` embeds it, so the two can be compared.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/planner/planner.h"

namespace zinf::cli {

nlohmann::json PlanJson(const Plan& plan, int batch_size);

}  // namespace zinf::cli
