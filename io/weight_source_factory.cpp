// OpenWeightSource: turns a placement (uniform, or the planner's) into a TieredWeightSource.
#include "io/weight_source_factory.h"

#include <spdlog/spdlog.h>

#include "engine/error.h"
#include "io/tiered_weight_source.h"

namespace zinf::io {

std::unique_ptr<WeightSource> OpenWeightSource(const Checkpoint& checkpoint,
                                               const WeightSourceOptions& options) {
  std::vector<WeightPlacement> placements = options.placements;
  if (placements.empty()) placements.assign(checkpoint.extents.size(), options.placement);
  if (placements.size() != checkpoint.extents.size()) {
    Fail("{} placements for the {} extents of {}", placements.size(), checkpoint.extents.size(),
         checkpoint.weights_file);
  }
  TieredOptions tiered;
  tiered.prefetch_depth = options.prefetch_depth;
  tiered.copy_buffers = options.copy_buffers;
  tiered.reader.allow_direct_io = options.allow_direct_io;
  tiered.reader.fault_hook = options.fault_hook;
  auto source = std::make_unique<TieredWeightSource>(checkpoint, std::move(placements), tiered);
  spdlog::info("weights {}: {}", checkpoint.weights_file, source->Describe());
  return source;
}

std::unique_ptr<WeightSource> OpenWeightSource(const Checkpoint& checkpoint,
                                               const Placement& placement,
                                               const WeightSourceOptions& options) {
  if (placement.size() != checkpoint.extents.size()) {
    Fail("{} placements for the {} extents of {}", placement.size(), checkpoint.extents.size(),
         checkpoint.weights_file);
  }
  WeightSourceOptions planned = options;
  planned.placements.clear();
  for (size_t e = 0; e < placement.size(); ++e) {
    planned.placements.push_back(placement.KeptInDram(e) ? WeightPlacement::kResident
                                                         : WeightPlacement::kStreamed);
  }
  // The ring holds prefetch_depth + 1 + copy_buffers buffers (TieredWeightSource); buffers for
  // experts are, like copy buffers, beyond the dense prefetch depth.
  planned.copy_buffers = placement.copy_buffers + placement.expert_buffers;
  planned.prefetch_depth = placement.staging_buffers > 0
                               ? placement.staging_buffers - 1 - planned.copy_buffers
                               : placement.prefetch_depth;
  return OpenWeightSource(checkpoint, planned);
}

}  // namespace zinf::io
