// DevicePool: one cudaMalloc, bump allocation, errors that say what did not fit and why.
#include "cuda/device_pool.h"

#include <cuda_runtime_api.h>

#include "engine/error.h"

namespace zinf::cuda {

namespace {
constexpr uint64_t kAlignment = 256;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

DevicePool::DevicePool(uint64_t bytes, std::string plan)
    : capacity_(bytes), plan_(std::move(plan)) {
  const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&base_), bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    Fail("cannot allocate {:.2f} GiB of GPU memory ({}: {:.2f} GiB free of {:.2f} GiB); the run "
         "needs {} — lower --batch-size or --max-context, quantize the checkpoint, or use "
         "--device cpu",
         bytes / kGiB, cudaGetErrorString(status), free_bytes / kGiB, total_bytes / kGiB, plan_);
  }
}

DevicePool::~DevicePool() { cudaFree(base_); }

void* DevicePool::Allocate(uint64_t bytes, std::string_view what) {
  const uint64_t start = (used_ + kAlignment - 1) / kAlignment * kAlignment;
  if (start + bytes > capacity_) {
    Fail("internal error: the GPU memory pool ({:.3f} GiB, {:.3f} used) has no room for {} "
         "({} bytes); the plan was {}",
         capacity_ / kGiB, used_ / kGiB, what, bytes, plan_);
  }
  used_ = start + bytes;
  return base_ + start;
}

}  // namespace zinf::cuda
