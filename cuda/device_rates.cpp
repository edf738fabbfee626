// What a GPU achieves, measured: pinned host-to-device copies (the reference a streamed run's
// weight copies are compared with), and for `zinf calibrate` device-memory bandwidth and the bf16
// matrix rate through the backend's own cuBLAS call, so plans rest on this machine's rates.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_timing.h"
#include "cuda/gemm.h"
#include "engine/error.h"

namespace zinf::cuda {

double MeasurePinnedH2DGbps(int device, uint64_t bytes) {
  if (const std::string reason = CudaUnavailableReason(); !reason.empty()) {
    Fail("--device cuda: {}; run with --device cpu", reason);
  }
  CheckCuda(cudaSetDevice(device), "selecting the GPU");
  void* host = nullptr;
  void* dev = nullptr;
  CheckCuda(cudaHostAlloc(&host, bytes, cudaHostAllocDefault), "allocating pinned host memory");
  const PinnedBuffer<void> host_owner(host);
  CheckCuda(cudaMalloc(&dev, bytes), "allocating device memory to copy into");
  const DeviceBuffer device_owner(dev);
  std::fill_n(static_cast<unsigned char*>(host), bytes, 1);  // touched: no page faults timed
  const double seconds = FastestSeconds(5, [&] {
    CheckCuda(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, nullptr),
              "copying to the GPU");
  });
  return bytes / seconds / 1e9;
}

void MeasureDeviceRates(int device, Bandwidths& rates) {
  if (const std::string reason = CudaUnavailableReason(); !reason.empty()) {
    Fail("--device cuda: {}; run with --device cpu", reason);
  }
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
  const CublasHandle handle = MakeCublas();
  const double gemm_seconds = FastestSeconds(5, [&] {
    Gemm(handle.get(), a.get(), b.get(), kernels::GemmType::kBF16, kDim, kDim, kDim,
         static_cast<float*>(c.get()));
  });
  rates.device_tflops = 2.0 * kDim * kDim * kDim / gemm_seconds / 1e12;
  MeasureKernelCosts(device, rates);

  // The logits leave the GPU every step as CudaBackend::CopyToHost moves them: into page-locked
  // staging, then into the sampler's ordinary buffer.
  constexpr uint64_t kLogitBytes = uint64_t{64} << 20;
  void* staging = nullptr;
  CheckCuda(cudaMallocHost(&staging, kLogitBytes), "allocating pinned host memory");
  const PinnedBuffer<void> staging_owner(staging);
  std::vector<float> host_logits(kLogitBytes / sizeof(float));
  const double d2h_seconds = FastestSeconds(5, [&] {
    CheckCuda(cudaMemcpy(staging, from.get(), kLogitBytes, cudaMemcpyDeviceToHost),
              "copying logits-sized data to the host");
    std::copy_n(static_cast<const float*>(staging), host_logits.size(), host_logits.data());
  });
  rates.gpu_logits_d2h_gbps = kLogitBytes / d2h_seconds / 1e9;
  rates.gpu_measured = true;
}

}  // namespace zinf::cuda
