// Routing profiles on disk: `zinf generate --save-routing FILE` writes one, `--routing-profile
// FILE` (generate, bench, plan) reads it for the planner. JSON, one entry per sparse layer.
#pragma once

#include <string>

#include "engine/model_config.h"
#include "engine/routing_profile.h"

namespace zinf::cli {

// Written atomically (a temporary file renamed over `path`).
void SaveRoutingProfile(const std::string& path, const RoutingProfile& profile,
                        const ModelConfig& config);

// Throws zinf::Error naming the file and what is wrong: unreadable, not a profile, or made for
// another shape of model (layers, experts, k).
RoutingProfile LoadRoutingProfile(const std::string& path, const ModelConfig& config);

}  // namespace zinf::cli
