// From a command's session options to the plan it runs: the limits, the planner's inputs (budgets,
// calibrated rates), --batch-size auto and --weights / --prefetch-depth, in one place for every
// command, so `zinf plan` prints exactly the plan `zinf generate` runs with the same flags.
#pragma once

#include <memory>
#include <string>

#include "cmd/session_options.h"
#include "engine/checkpoint.h"
#include "engine/model.h"
#include "engine/planner/planner.h"

namespace zinf::cli {

// What a run of `checkpoint` under `options` is planned as: the limits Model runs under, the
// planner's inputs, the batch --batch-size auto chose (and why), and the plan.
struct SessionPlan {
  ModelLimits limits;
  std::shared_ptr<const RoutingProfile> routing;  // --routing-profile; inputs.routing points here
  PlannerInputs inputs;
  Plan plan;
  std::string batch_choice;  // empty unless --batch-size auto
};

// --batch-size auto for `requests` prompts: never more slots than requests (more would only cost
// KV-cache memory), at most 256.
int MaxAutoBatchFor(size_t requests);

// The one path from options to a plan, for every command. Throws zinf::Error for a bad
// combination of flags or a plan that cannot fit.
SessionPlan PlanSession(const Checkpoint& checkpoint, const SessionOptions& options);

}  // namespace zinf::cli
