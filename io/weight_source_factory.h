// Opens a converted checkpoint's weights file as the engine's WeightSource.
#pragma once

#include <memory>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/planner/placement.h"
#include "engine/weight_source.h"
#include "io/extent_reader.h"

namespace zinf::io {

enum class WeightPlacement {
  kResident,  // every extent read once at start and kept in memory
  kStreamed,  // every extent re-read from the file on every forward pass
};

struct WeightSourceOptions {
  WeightPlacement placement = WeightPlacement::kResident;
  // Per extent, in checkpoint order (a planner's choice); empty: `placement` for every extent.
  std::vector<WeightPlacement> placements;
  int prefetch_depth = 1;  // streamed: extents read ahead of the one being computed
  // Streamed: staging buffers beyond prefetch_depth + 1 (see TieredOptions::copy_buffers).
  int copy_buffers = 0;
  bool allow_direct_io = true;  // O_DIRECT when the filesystem allows it; buffered otherwise
  ReadFaultHook fault_hook;     // tests only (zinf generate --fault-inject): see extent_reader.h
};

std::unique_ptr<WeightSource> OpenWeightSource(const Checkpoint& checkpoint,
                                               const WeightSourceOptions& options);

// The weight source of a planned run: the extents `placement` keeps in DRAM
// (Placement::KeptInDram) read once and kept, every other one read through the placement's
// staging ring (its buffers, copy buffers included, exactly as the plan counted them). Only the
// I/O settings of `options` apply (direct I/O, fault hook).
std::unique_ptr<WeightSource> OpenWeightSource(const Checkpoint& checkpoint,
                                               const Placement& placement,
                                               const WeightSourceOptions& options);

}  // namespace zinf::io
