// MeasurePinnedH2DGbps: the reference a streamed run's weight copies are compared with.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace {
struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct EventDestroy {
  void operator()(cudaEvent_t event) const { cudaEventDestroy(event); }
};
using Event = std::unique_ptr<CUevent_st, EventDestroy>;

Event MakeEvent() {
  cudaEvent_t event = nullptr;
  CheckCuda(cudaEventCreate(&event), "creating an event to time a copy");
  return Event(event);
}
}  // namespace

double MeasurePinnedH2DGbps(int device, uint64_t bytes) {
  if (const std::string reason = CudaUnavailableReason(); !reason.empty()) {
    Fail("--device cuda: {}; run with --device cpu", reason);
  }
  CheckCuda(cudaSetDevice(device), "selecting the GPU");
  void* host = nullptr;
  void* dev = nullptr;
  CheckCuda(cudaHostAlloc(&host, bytes, cudaHostAllocDefault), "allocating pinned host memory");
  const std::unique_ptr<void, HostFree> host_owner(host);
  CheckCuda(cudaMalloc(&dev, bytes), "allocating device memory to copy into");
  const std::unique_ptr<void, DeviceFree> device_owner(dev);
  std::fill_n(static_cast<unsigned char*>(host), bytes, 1);  // touched: no page faults timed
  const Event start = MakeEvent(), stop = MakeEvent();
  double best = 0;
  for (int i = 0; i < 6; ++i) {  // the first is a warm-up
    CheckCuda(cudaEventRecord(start.get(), nullptr), "timing a copy");
    CheckCuda(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, nullptr),
              "copying to the GPU");
    CheckCuda(cudaEventRecord(stop.get(), nullptr), "timing a copy");
    CheckCuda(cudaEventSynchronize(stop.get()), "copying to the GPU");
    float milliseconds = 0;
    CheckCuda(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "timing a copy");
    if (i > 0 && milliseconds > 0) best = std::max(best, bytes / (milliseconds / 1e3) / 1e9);
  }
  return best;
}

}  // namespace zinf::cuda
