// Splits each layer extent into its attention part and its MLP part, so a streamed layer needs a
// staging buffer only as large as its larger part and the planner places each part on its own.
#pragma once

#include "engine/checkpoint.h"

namespace zinf {

// A layer extent is split when each of its tensors has its own checksum (converted since
// 2026-12-07) and its tensors are in the format's order: the attention block's first, then the
// MLP's from `ffn_norm` on. The attention part starts where the extent does; the MLP part starts
// at the 4 KiB boundary at or before `ffn_norm`, so both are direct-I/O reads of the same file
// and share at most one page. Other extents (and layers of older files) stay whole.
// The planner sees the parts as extents: for Llama-2-13B in f16 under 16 GiB, two staging
// buffers of its 405 MiB MLP part instead of its 605 MiB layer leave 0.5 GiB more resident.
std::vector<ExtentInfo> SplitLayers(const std::vector<ExtentInfo>& extents);

// The checkpoint as the engine streams and places it: SplitLayers of its extents.
Checkpoint WithLayerParts(Checkpoint checkpoint);

// True when some layer extent of `checkpoint` (after WithLayerParts) is still whole: a file
// converted before tensors had checksums, whose streamed layers need whole-layer staging.
bool HasWholeLayers(const Checkpoint& checkpoint);

}  // namespace zinf
