// Pieces the CPU and CUDA planners share: the order extents claim residency, the arithmetic a
// step does, and sizes for messages. Internal to engine/planner*.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/planner.h"

namespace zinf::planner_detail {

// "1.59 GiB", "26.1 MiB", "512 KiB": the unit that keeps a size readable.
std::string GiB(uint64_t bytes);

// Order in which extents claim residency. Per byte kept resident, every extent saves the same
// transfer time; but the largest extent still moved sets the size of every staging buffer (and
// device slot), so the largest go first. Among equals the embeddings lead (only a few of their rows
// are used, yet moving them moves them whole), then file order.
std::vector<size_t> ResidencyOrder(const std::vector<ExtentInfo>& extents);

// Parameters that take part in matrix products (the embedding table is a lookup).
double ParameterCount(const Checkpoint& checkpoint);

}  // namespace zinf::planner_detail

namespace zinf {
std::string CudaSummary(const Plan& plan);
}  // namespace zinf
