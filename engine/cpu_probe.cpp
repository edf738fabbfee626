// The probes run the same code paths real work does: the thread pool and the CPU backend's MatMul.
#include "engine/cpu_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/cpu_backend.h"
#include "engine/thread_pool.h"

namespace zinf {

namespace {

template <typename Body>
double BestSeconds(int repeats, Body body) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
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

double MeasureMatmulGflops(int num_threads) {
  constexpr int kTokens = 32, kDim = 4096;
  CpuBackend backend(num_threads);
  Tensor x = backend.AllocateActivation(kTokens, kDim);
  Tensor out = backend.AllocateActivation(kTokens, kDim);
  std::fill_n(static_cast<float*>(x.data), kTokens * kDim, 0.5f);
  std::vector<float> weights(static_cast<size_t>(kDim) * kDim, 0.25f);
  const Weight w{weights.data(), DType::kF32, kDim, kDim};
  const double seconds = BestSeconds(3, [&] { backend.MatMul(x, w, {}, out); });
  return 2.0 * kTokens * kDim * kDim / seconds / 1e9;
}

}  // namespace zinf
