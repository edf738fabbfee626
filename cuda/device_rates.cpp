// What a GPU achieves, measured: pinned host-to-device copies (the reference a streamed run's
// weight copies are compared with), and for `zinf calibrate` device-memory bandwidth and the bf16
// matrix rate through the backend's own cuBLAS call, so plans rest on this machine's rates.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/gemm.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace {

struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

DeviceBuffer AllocateDevice(uint64_t bytes, const char* what) {
  void* p = nullptr;
  CheckCuda(cudaMalloc(&p, bytes), what);
  return DeviceBuffer(p);
}

struct EventDestroy {
  void operator()(cudaEvent_t event) const { cudaEventDestroy(event); }
};
using Event = std::unique_ptr<CUevent_st, EventDestroy>;

Event MakeEvent() {
  cudaEvent_t event = nullptr;
  CheckCuda(cudaEventCreate(&event), "creating an event to time the GPU");
  return Event(event);
}

// The fastest of `runs` timed calls of `work` (after one warm-up), in seconds.
template <typename Work>
double FastestSeconds(int runs, Work work) {
  const Event start = MakeEvent(), stop = MakeEvent();
  double best = 0;
  for (int i = 0; i <= runs; ++i) {
    CheckCuda(cudaEventRecord(start.get(), nullptr), "timing the GPU");
    work();
    CheckCuda(cudaEventRecord(stop.get(), nullptr), "timing the GPU");
    CheckCuda(cudaEventSynchronize(stop.get()), "timing the GPU");
    float milliseconds = 0;
    CheckCuda(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "timing the GPU");
    const double seconds = milliseconds / 1e3;
    if (i > 0 && seconds > 0 && (best == 0 || seconds < best)) best = seconds;
  }
  return best;
}

struct CublasDestroy {
  void operator()(cublasHandle_t handle) const { cublasDestroy(handle); }
};

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
  const double seconds = FastestSeconds(5, [&] {
    CheckCuda(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, nullptr),
              "copying to the GPU");
  });
  return bytes / seconds / 1e9;
}

DeviceRates MeasureDeviceRates(int device) {
  if (const std::string reason = CudaUnavailableReason(); !reason.empty()) {
    Fail("--device cuda: {}; run with --device cpu", reason);
  }
  DeviceRates rates;
  rates.h2d_gbps = MeasurePinnedH2DGbps(device, uint64_t{256} << 20);
  CheckCuda(cudaSetDevice(device), "selecting the GPU");

  // Device memory: a 1 GiB device-to-device copy reads and writes every byte once; weights are
  // only read, so the rate counts both directions, as a read-only stream would achieve.
  constexpr uint64_t kCopyBytes = uint64_t{1} << 30;
  const DeviceBuffer from = AllocateDevice(kCopyBytes, "allocating device memory to time copies");
  const DeviceBuffer to = AllocateDevice(kCopyBytes, "allocating device memory to time copies");
  CheckCuda(cudaMemset(from.get(), 1, kCopyBytes), "filling device memory");
  const double copy_seconds = FastestSeconds(5, [&] {
    CheckCuda(cudaMemcpyAsync(to.get(), from.get(), kCopyBytes, cudaMemcpyDeviceToDevice, nullptr),
              "copying within device memory");
  });
  rates.device_gbps = 2.0 * kCopyBytes / copy_seconds / 1e9;

  // bf16 matrices of 8192²: large enough for the matrix units' sustained rate. The values are
  // ones, not zeros (zeros can run faster than real data).
  constexpr int64_t kDim = 8192;
  const uint64_t matrix_bytes = kDim * kDim * 2;
  const DeviceBuffer a = AllocateDevice(matrix_bytes, "allocating matrices to time the GPU");
  const DeviceBuffer b = AllocateDevice(matrix_bytes, "allocating matrices to time the GPU");
  const DeviceBuffer c = AllocateDevice(kDim * kDim * 4, "allocating matrices to time the GPU");
  CheckCuda(cudaMemset(a.get(), 0x3f, matrix_bytes), "filling matrices");  // bf16 0x3f3f ≈ 0.75
  CheckCuda(cudaMemset(b.get(), 0x3f, matrix_bytes), "filling matrices");
  cublasHandle_t raw = nullptr;
  CheckCublas(cublasCreate(&raw), "creating a cuBLAS handle");
  const std::unique_ptr<cublasContext, CublasDestroy> handle(raw);
  const double gemm_seconds = FastestSeconds(5, [&] {
    Gemm(handle.get(), a.get(), b.get(), kernels::GemmType::kBF16, kDim, kDim, kDim,
         static_cast<float*>(c.get()));
  });
  rates.device_tflops = 2.0 * kDim * kDim * kDim / gemm_seconds / 1e12;
  return rates;
}

}  // namespace zinf::cuda
