// Measures a file's sequential read rate through the same reader the weights streamer uses
// (io_uring, O_DIRECT when allowed), for the planner's disk bandwidth.
#pragma once

#include <cstdint>
#include <string>

namespace zinf::io {

struct DiskReadRate {
  double gbps = 0;  // 1e9 bytes per second
  uint64_t bytes_read = 0;
  bool direct_io = false;  // false: the page cache may have served it, and the number says so
};

// Reads up to max_bytes of `path` from its start in 64 MiB pieces, two in flight.
DiskReadRate MeasureDiskRead(const std::string& path, uint64_t max_bytes);

}  // namespace zinf::io
