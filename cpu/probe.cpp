// The probes run the same code paths real work does: the thread pool and the CPU backend's MatMul.
#include "cpu/probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/thread_pool.h"
#include "engine/error.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

template <typename Body>
double BestSeconds(int repeats, Body body) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

double MeasureDramReadGbps(int num_threads) {
  constexpr size_t kWords = (size_t{512} << 20) / sizeof(uint64_t);  // 512 MiB: beyond any cache
  std::vector<uint64_t> data(kWords, 1);  // touched once here, so reads hit DRAM, not page faults
  ThreadPool pool(num_threads);
  std::vector<uint64_t> sums(kWords / 4096 + 1);
  const double seconds = BestSeconds(3, [&] {
    pool.ParallelFor(static_cast<int64_t>(kWords / 4096), [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        uint64_t sum = 0;
        const uint64_t* words = data.data() + block * 4096;
        for (int i = 0; i < 4096; ++i) sum += words[i];
        sums[block] = sum;  // kept, so the loop is not optimised away
      }
    });
  });
  return kWords * sizeof(uint64_t) / seconds / 1e9;
}

double MeasureMatmulGflops(int num_threads, DType weights) {
  constexpr int kTokens = 32, kDim = 4096, kGroupSize = 64;
  CpuBackend backend(num_threads);
  Tensor x = backend.AllocateActivation(kTokens, kDim);
  Tensor out = backend.AllocateActivation(kTokens, kDim);
  std::fill_n(static_cast<float*>(x.data), kTokens * kDim, 0.5f);
  // Varied values, so no kernel takes a shortcut a real matrix would not allow.
  std::vector<float> row(kDim);
  for (int c = 0; c < kDim; ++c) row[c] = 0.25f * static_cast<float>((c * 37) % 17 - 8);
  Weight w{nullptr, weights, kDim, kDim, weights == DType::kQ4 ? kGroupSize : 0};
  std::vector<std::byte> bytes(TensorBytes(weights, kDim, kDim, w.group_size));
  if (weights == DType::kF32) {
    for (int r = 0; r < kDim; ++r) {
      std::copy(row.begin(), row.end(), reinterpret_cast<float*>(bytes.data()) + int64_t{r} * kDim);
    }
  } else {
    ZINF_CHECK(IsQuantized(weights), "no matmul probe for {}", DTypeName(weights));
    const QuantLayout layout = LayoutOf(weights, kDim, kDim, w.group_size);
    for (int r = 0; r < kDim; ++r) {
      std::byte* values = bytes.data() + r * layout.row_bytes();
      std::byte* params = bytes.data() + layout.scales_offset();
      if (weights == DType::kI8) {
        QuantizeRowI8(row.data(), kDim, reinterpret_cast<int8_t*>(values),
                      reinterpret_cast<float*>(params) + r);
      } else {
        QuantizeRowQ4(row.data(), kDim, kGroupSize, reinterpret_cast<uint8_t*>(values),
                      reinterpret_cast<uint16_t*>(params) + 2 * r * layout.groups());
      }
    }
  }
  w.data = bytes.data();
  const double seconds = BestSeconds(3, [&] { backend.MatMul(x, w, {}, out); });
  return 2.0 * kTokens * kDim * kDim / seconds / 1e9;
}

}  // namespace zinf::cpu
