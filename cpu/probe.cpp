// The probes run the same code paths real work does: the thread pool and the CPU backend's MatMul.
#include "cpu/probe.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
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

// Σ of `count` words (a multiple of 32), in independent sums so that loads, not an add chain, set
// the pace: as the weight kernels read, in full vectors.
uint64_t SumWords(const uint64_t* words, int64_t count) {
  uint64_t lanes[8] = {};
  for (int64_t i = 0; i < count; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += words[i + j];
  }
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3] ^ lanes[4] ^ lanes[5] ^ lanes[6] ^ lanes[7];
}

constexpr int64_t kPrefetchAhead = 4096;

__attribute__((target("avx2"))) uint64_t SumWordsAvx2(const uint64_t* words, int64_t count) {
  __m256i lanes[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                      _mm256_setzero_si256()};
  for (int64_t i = 0; i < count; i += 16) {
    // As the weight kernels do: the lines a few KiB ahead requested now (past the block's end they
    // are the next block's).
    _mm_prefetch(reinterpret_cast<const char*>(words + i) + kPrefetchAhead, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(words + i) + kPrefetchAhead + 64, _MM_HINT_T0);
    for (int j = 0; j < 4; ++j) {
      lanes[j] = _mm256_add_epi64(
          lanes[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i + 4 * j)));
    }
  }
  const __m256i all =
      _mm256_xor_si256(_mm256_xor_si256(lanes[0], lanes[1]), _mm256_xor_si256(lanes[2], lanes[3]));
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), all);
  return out[0] ^ out[1] ^ out[2] ^ out[3];
}

}  // namespace

DramReadRate MeasureDramRead(int num_threads, int passes) {
  constexpr int64_t kBlockWords = 4096;                              // 32 KiB
  constexpr int64_t kBlocks = (int64_t{1} << 30) / 8 / kBlockWords;  // 1 GiB: beyond any cache
  // Not value-initialised: each thread first-touches the blocks it later reads (the pool's split
  // depends only on the count), so their pages sit on that thread's memory node.
  std::unique_ptr<uint64_t[]> data(new uint64_t[kBlocks * kBlockWords]);
  ThreadPool pool(num_threads);
  pool.ParallelFor(kBlocks, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * kBlockWords; i < end * kBlockWords; ++i)
      data[i] = static_cast<uint64_t>(i);
  });
  std::vector<uint64_t> sums(kBlocks);
  const bool avx2 = __builtin_cpu_supports("avx2");
  auto pass = [&] {
    pool.ParallelFor(kBlocks, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        const uint64_t* words = data.get() + block * kBlockWords;
        // kept, so the loop is not optimised away
        sums[block] = avx2 ? SumWordsAvx2(words, kBlockWords) : SumWords(words, kBlockWords);
      }
    });
  };
  pass();  // warm-up: TLBs, page tables, the workers awake
  std::vector<double> rates;
  for (int i = 0; i < passes; ++i) {
    const double seconds = BestSeconds(1, pass);
    rates.push_back(static_cast<double>(kBlocks * kBlockWords * 8) / seconds / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  DramReadRate rate;
  rate.median_gbps = rates[rates.size() / 2];
  rate.min_gbps = rates.front();
  rate.max_gbps = rates.back();
  rate.passes = passes;
  return rate;
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
