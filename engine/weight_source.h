// The only way weights reach the forward pass: extents acquired from a WeightSource, in order.
// io/ implements it (io_uring reads into staging buffers, or extents kept resident); the forward
// pass asks for the next extents ahead of time with Prefetch so reads overlap compute.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/checkpoint.h"

namespace zinf {

struct WeightIoStats {
  uint64_t bytes_read = 0;  // from storage, all extents, including the initial resident load
  uint64_t extents_read = 0;
  double read_wait_seconds = 0;  // time Acquire spent blocked on I/O and its checksum check
  double checksum_seconds = 0;   // hashing, on whichever thread did it
  // Time with at least one read pending: bytes_read ÷ this is the rate storage delivered while
  // zinf read from it, whether or not compute kept up.
  double read_busy_seconds = 0;
};

// One extent's bytes, valid until Release(extent_idx). Tensors are at tensor.offset_in_extent.
struct ExtentView {
  const ExtentInfo* info = nullptr;
  std::span<const std::byte> bytes;

  const std::byte* tensor_data(const TensorInfo& tensor) const {
    return bytes.data() + tensor.offset_in_extent;
  }
};

// Blocks until a device has finished reading an extent's host bytes: what a backend whose copies
// run asynchronously (CUDA's copy stream) hands back from UnbindExtent. Empty when nothing reads
// them once UnbindExtent returns (the CPU backend). A weight source keeps it with the extent's
// buffer and calls it only before overwriting or freeing that buffer, so the layer loop waits for
// a copy only when the host memory it reads is really needed again. Copyable; it may be called
// late (after the backend is gone) and more than once.
using CopyFence = std::function<void()>;

// Not thread-safe: one forward-pass thread drives it. Failures (I/O error, checksum mismatch)
// throw zinf::Error naming the extent.
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Starts fetching an extent if it is not resident or already in flight. A hint: may do nothing
  // when no staging buffer is free.
  virtual void Prefetch(int extent_idx) = 0;
  // Blocks until the extent is in memory and its checksum verified.
  virtual ExtentView Acquire(int extent_idx) = 0;
  // The forward pass is done with the extent. Its staging buffer may be reused for another read,
  // but only after `fence` (the backend's UnbindExtent) has returned; resident bytes, never
  // overwritten, drop it.
  virtual void Release(int extent_idx, CopyFence fence = {}) = 0;
  // How many extents beyond the current one the forward pass should Prefetch.
  virtual int prefetch_depth() const = 0;
  virtual WeightIoStats stats() const = 0;
  // The host memory extents arrive in (resident and staging buffers), fixed for the source's
  // life, so a device backend can page-lock it once for fast asynchronous copies.
  virtual std::vector<std::span<const std::byte>> HostMemory() const { return {}; }
};

// How many of a step's `num_streamed` streamed extents the forward pass reads ahead with a source
// of prefetch depth `depth`: at most num_streamed − 1 (one more would be the extent being acquired,
// staged already, so nothing would reach into the next step), 0 when nothing is streamed. The
// planner's walk of a step (engine/planner/step_pipeline.h) reads ahead the same.
inline int ReadAheadWindow(int depth, int num_streamed) {
  if (num_streamed <= 0 || depth <= 0) return 0;
  return std::min(depth, std::max(num_streamed - 1, 1));
}

}  // namespace zinf
