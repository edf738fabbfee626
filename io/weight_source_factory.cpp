// OpenWeightSource: turns the user's placement options into a TieredWeightSource.
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

}  // namespace zinf::io
