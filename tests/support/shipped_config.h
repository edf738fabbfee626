// A checkpoint description (no weights) for one of configs/*.json, as `convert` would lay it out:
// what the planner tests plan for.
#pragma once

#include <string>

#include "engine/checkpoint.h"

namespace zinf::testing {

// configs/NAME.json with every tensor in `dtype`.
Checkpoint ShippedConfigCheckpoint(const std::string& name, DType dtype = DType::kF16);

}  // namespace zinf::testing
