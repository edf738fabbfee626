// PlanJson (cmd/plan_json.h).
#include "cmd/plan_json.h"

namespace zinf::cli {

nlohmann::json PlanJson(const Plan& plan, int batch_size) {
  const Placement& placement = plan.placement;
  nlohmann::json tiers = nlohmann::json::array();
  for (const Tier tier : placement) tiers.push_back(TierName(tier));
  return {{"backend", BackendName(placement.backend)},
          {"batch_size", batch_size},
          {"tiers", tiers},
          {"prefetch_depth", placement.prefetch_depth},
          {"staging",
           {{"buffers", placement.staging_buffers},
            {"copy_buffers", placement.copy_buffers},
            {"buffer_bytes", placement.staging_buffer_bytes}}},
          {"device_slots", placement.device_slots},
          {"kv_tier", TierName(plan.kv_tier)},
          {"experts_on_host", placement.host_computes_experts},
          {"bytes",
           {{"dram", plan.total_dram_bytes()},
            {"device", plan.device_bytes},
            {"kv_cache", plan.kv_bytes},
            {"activations", plan.activation_bytes},
            {"streamed_per_step", plan.streamed_bytes_per_step}}},
          {"bound", BoundName(plan.bound)},
          {"predicted_decode_tokens_per_s", plan.predicted_tokens_per_s}};
}

}  // namespace zinf::cli
