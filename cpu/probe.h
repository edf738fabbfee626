// Measures this machine's DRAM read bandwidth and the CPU backend's matmul rate, for the planner.
#pragma once

#include "engine/dtype.h"

namespace zinf::cpu {

// All `num_threads` threads streaming through a buffer far larger than the caches; best of 3.
double MeasureDramReadGbps(int num_threads);

// The CPU backend's matmul rate at a batch of 32 tokens over a 4096 × 4096 weight stored as
// `weights` (f32, int8, or int4 in groups of 64); best of 3.
double MeasureMatmulGflops(int num_threads, DType weights = DType::kF32);

}  // namespace zinf::cpu
