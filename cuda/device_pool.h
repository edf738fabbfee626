// The run's one device allocation, handed out front to back. Nothing is freed before the run
// ends, so the step loop never calls cudaMalloc and fragmentation cannot happen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zinf::cuda {

class DevicePool {
 public:
  // Allocates `bytes` on the current device; `plan` (a summary of what the bytes are for) goes
  // into the error when the allocation or a later Allocate does not fit.
  DevicePool(uint64_t bytes, std::string plan);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // 256-byte aligned; throws zinf::Error naming `what` when the pool is exhausted.
  void* Allocate(uint64_t bytes, std::string_view what);
  uint64_t used() const { return used_; }
  uint64_t capacity() const { return capacity_; }

 private:
  std::byte* base_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t used_ = 0;
  std::string plan_;
};

}  // namespace zinf::cuda
