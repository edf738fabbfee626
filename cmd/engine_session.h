// Everything one run of the engine needs, built from a checkpoint and the user's options: the
// plan (cmd/session_plan.h), the weight source it implies, the backend (CPU or CUDA) and the
// model. Shared by generate, bench, perplexity and the in-process test harness, so all run
// exactly the same path.
#pragma once

#include <memory>
#include <string>

#include "cmd/session_options.h"
#include "cmd/session_plan.h"
#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/model.h"
#include "engine/planner/planner.h"
#include "engine/weight_source.h"

namespace zinf::cli {

// Owns the weight source, backend and model; not thread-safe. Construction throws zinf::Error
// (a plan that cannot fit, an unreadable weights file, no usable GPU for --device cuda).
class EngineSession {
 public:
  EngineSession(const Checkpoint& checkpoint, const SessionOptions& options);

  Model& model() { return *model_; }
  WeightSource& weights() { return *weights_; }
  const Plan& plan() const { return planned_.plan; }
  const Bandwidths& bandwidths() const { return planned_.inputs.bandwidths; }  // the plan's rates
  const ModelLimits& limits() const { return planned_.limits; }
  std::string backend_name() const { return backend_->name(); }
  TransferStats transfer_stats() const { return backend_->transfer_stats(); }

 private:
  SessionPlan planned_;
  std::unique_ptr<WeightSource> weights_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Backend> host_experts_;  // cuda, --moe-experts cpu: computes off-device experts
  std::unique_ptr<Model> model_;
};

}  // namespace zinf::cli
