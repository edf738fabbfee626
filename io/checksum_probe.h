// Measures how fast this machine verifies the weights file's extents (XXH3-64 over bytes just
// read into DRAM, on one thread, as TieredWeightSource::Acquire does), for the planner.
#pragma once

namespace zinf::io {

// GB/s (1e9 bytes per second) of XXH3-64 over a 256 MiB buffer evicted from the caches first, as
// a staging buffer a read has just filled; the best of 3.
double MeasureChecksumGbps();

}  // namespace zinf::io
