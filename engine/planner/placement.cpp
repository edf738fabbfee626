// Names of tiers and backends, as plans and logs print them.
#include "engine/planner/placement.h"

namespace zinf {

const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kDevice: return "device";
    case Tier::kDram: return "dram";
    case Tier::kNvme: return "nvme";
  }
  return "?";
}

const char* TierPlace(Tier tier, BackendKind backend) {
  switch (tier) {
    case Tier::kDevice: return backend == BackendKind::kCuda ? "GPU" : "DRAM";
    case Tier::kDram: return "DRAM";
    case Tier::kNvme: return "disk";
  }
  return "?";
}

const char* BackendName(BackendKind backend) {
  return backend == BackendKind::kCuda ? "cuda" : "cpu";
}

}  // namespace zinf
