// Software requests for a region of weights into L2, a share at a time: the next row tile's
// lines asked for while the current tile computes, so that their reads from DRAM overlap its
// products instead of stalling the unpacking that starts the next tile.
#pragma once

#include <xmmintrin.h>

#include <cstdint>

namespace zinf::cpu {

// Part `part` of `parts` of the lines of [region, region + bytes), into L2 (parts 1: all of them).
inline __attribute__((always_inline)) void PrefetchRegionShare(const void* region, int64_t bytes,
                                                               int64_t part, int64_t parts) {
  const int64_t lines = (bytes + 63) / 64;
  const char* base = static_cast<const char*>(region);
  for (int64_t line = lines * part / parts; line < lines * (part + 1) / parts; ++line)
    _mm_prefetch(base + 64 * line, _MM_HINT_T1);
}

}  // namespace zinf::cpu
