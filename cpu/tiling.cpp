// The token block size of the walks in cpu/tiling.h, from the L2 the system reports.
#include "cpu/tiling.h"

#include <unistd.h>

namespace zinf::cpu {

int64_t TokenBlockBytes() {
  static const int64_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return (l2 > 0 ? int64_t{l2} : int64_t{2} << 20) * 3 / 8;
  }();
  return bytes;
}

}  // namespace zinf::cpu
