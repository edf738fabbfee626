// A buffer a thread keeps between calls: grown when a call needs more, never shrunk, so the step
// loop stops allocating once it has seen its largest batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zinf::cpu {

// buffer's data, with room for at least `count` elements.
template <typename T>
T* Grown(std::vector<T>& buffer, int64_t count) {
  if (buffer.size() < static_cast<size_t>(count)) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

}  // namespace zinf::cpu
