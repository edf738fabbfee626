// The probes run the same code paths real work does: the thread pool and the CPU backend's MatMul.
#include "cpu/probe.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "cpu/attention.h"
#include "cpu/cpu_backend.h"
#include "cpu/thread_pool.h"
#include "cpu/tile_prefetch.h"
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

// A thread reads its share of the buffer as the one-token kernels read their rows (tiling.h's
// ForEachStridedTile): `streams` sequential streams side by side, a line of each in turn. One
// stream per thread under-measured an Emerald Rapids guest by a fifth (26.7 vs 32 GB/s with 8); the
// kernels read 8 (f32, f16, int8) or 16 (int4 at AVX-512), and neither count is the faster on
// every machine, so the probe reads both ways.
constexpr int kStreamCounts[] = {8, 16};
constexpr int kMaxStreams = *std::max_element(std::begin(kStreamCounts), std::end(kStreamCounts));
// Blocks only split the buffer among the threads.
constexpr int64_t kBlockWords = int64_t{1} << 13;

// Words per stream for `count` words: an odd number of lines, as the kernels' strided tiles step
// (at a power of two apart all streams share L1 sets, which measured the probe slower than the
// kernels); the few lines left over are not read, a negligible share of the bytes counted.
int64_t StreamWords(int64_t count, int streams) {
  int64_t lines = count / streams / 8;
  lines -= lines > 1 && lines % 2 == 0;
  return lines * 8;
}

// Σ of `count` words in independent sums so that loads, not an add chain, set the pace.
uint64_t SumStreams(const uint64_t* words, int64_t count, int streams, bool /*prefetch*/) {
  const int64_t length = StreamWords(count, streams);
  uint64_t lanes[kMaxStreams] = {};
  for (int64_t i = 0; i < length; ++i) {
    for (int s = 0; s < streams; ++s) lanes[s] += words[s * length + i];
  }
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum ^= lane;
  return sum;
}

// With `prefetch`, each stream's line kStreamPrefetchBytes ahead is requested as the kernels do.
template <int kStreams>
__attribute__((target("avx2"))) uint64_t SumStreamsAvx2(const uint64_t* words, int64_t count,
                                                        bool prefetch) {
  const int64_t length = StreamWords(count, kStreams);
  __m256i lanes[kStreams];
  for (__m256i& lane : lanes) lane = _mm256_setzero_si256();
  for (int64_t i = 0; i < length; i += 8) {  // a line of every stream
    for (int s = 0; s < kStreams; ++s) {
      const uint64_t* line = words + s * length + i;
      if (prefetch) {
        _mm_prefetch(reinterpret_cast<const char*>(line) + kStreamPrefetchBytes, _MM_HINT_T0);
      }
      const __m256i both =
          _mm256_add_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(line)),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line + 4)));
      lanes[s] = _mm256_add_epi64(lanes[s], both);
    }
  }
  __m256i all = lanes[0];
  for (int s = 1; s < kStreams; ++s) all = _mm256_xor_si256(all, lanes[s]);
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), all);
  return out[0] ^ out[1] ^ out[2] ^ out[3];
}

// SumStreams at the widest instruction set this CPU has.
uint64_t SumStreamsAtBestIsa(const uint64_t* words, int64_t count, int streams, bool prefetch) {
  if (!__builtin_cpu_supports("avx2")) return SumStreams(words, count, streams, prefetch);
  return streams == 8 ? SumStreamsAvx2<8>(words, count, prefetch)
                      : SumStreamsAvx2<16>(words, count, prefetch);
}

struct Spread {
  double median = 0, min = 0, max = 0;
};

Spread SpreadOf(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  return {rates[rates.size() / 2], rates.front(), rates.back()};
}

}  // namespace

DramReadRate MeasureDramRead(int num_threads, int passes, int64_t bytes) {
  const int64_t blocks = std::max<int64_t>(1, bytes / 8 / kBlockWords);
  // Not value-initialised: each thread first-touches the blocks it later reads (the pool's split
  // depends only on the count), so their pages sit on that thread's memory node.
  std::unique_ptr<uint64_t[]> data(new uint64_t[blocks * kBlockWords]);
  ThreadPool pool(num_threads);
  pool.ParallelFor(blocks, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * kBlockWords; i < end * kBlockWords; ++i)
      data[i] = static_cast<uint64_t>(i);
  });
  std::vector<uint64_t> sums(blocks);
  auto pass = [&](int streams, bool prefetch) {
    pool.ParallelFor(blocks, [&](int64_t begin, int64_t end) {
      const uint64_t* words = data.get() + begin * kBlockWords;
      // kept, so the loop is not optimised away
      sums[begin] = SumStreamsAtBestIsa(words, (end - begin) * kBlockWords, streams, prefetch);
    });
  };
  pass(kStreamCounts[0], true);  // warm-up: TLBs, page tables, the workers awake
  // Each way in turn, so that all see the same stretch of the machine's load: the bound is the
  // fastest (the kernels measure whether they prefetch, cpu/tile_prefetch.h).
  struct Way {
    int streams;
    bool prefetch;
    std::vector<double> rates;
  };
  std::vector<Way> ways;
  for (const int streams : kStreamCounts) {
    for (const bool prefetch : {false, true}) ways.push_back({streams, prefetch, {}});
  }
  for (int i = 0; i < passes; ++i) {
    for (Way& way : ways) {
      const double seconds = BestSeconds(1, [&] { pass(way.streams, way.prefetch); });
      way.rates.push_back(static_cast<double>(blocks * kBlockWords * 8) / seconds / 1e9);
    }
  }
  DramReadRate rate;
  for (const Way& way : ways) {
    const Spread spread = SpreadOf(way.rates);
    if (spread.median <= rate.median_gbps) continue;
    rate.median_gbps = spread.median;
    rate.min_gbps = spread.min;
    rate.max_gbps = spread.max;
    rate.software_prefetch = way.prefetch;
    rate.streams = way.streams;
  }
  rate.passes = passes;
  return rate;
}

std::vector<double> MeasureMatmulGflops(int num_threads, DType weights,
                                        std::span<const int> token_counts, int group_size,
                                        int dim) {
  constexpr int kMatmulPasses = 5;
  CpuBackend backend(num_threads);
  // Varied values, so no kernel takes a shortcut a real matrix would not allow.
  std::vector<float> row(dim);
  for (int c = 0; c < dim; ++c) row[c] = 0.25f * static_cast<float>((c * 37) % 17 - 8);
  Weight w{nullptr, weights, dim, dim, weights == DType::kQ4 ? group_size : 0};
  std::vector<std::byte> bytes(TensorBytes(weights, dim, dim, w.group_size));
  if (weights == DType::kF32) {
    for (int r = 0; r < dim; ++r) {
      std::copy(row.begin(), row.end(), reinterpret_cast<float*>(bytes.data()) + int64_t{r} * dim);
    }
  } else if (weights == DType::kF16) {
    auto* values = reinterpret_cast<uint16_t*>(bytes.data());
    for (int64_t i = 0; i < int64_t{dim} * dim; ++i) values[i] = F32ToF16(row[i % dim]);
  } else {
    ZINF_CHECK(IsQuantized(weights), "no matmul probe for {}", DTypeName(weights));
    const QuantLayout layout = LayoutOf(weights, dim, dim, w.group_size);
    for (int r = 0; r < dim; ++r) {
      std::byte* values = bytes.data() + r * layout.row_bytes();
      std::byte* params = bytes.data() + layout.scales_offset();
      if (weights == DType::kI8) {
        QuantizeRowI8(row.data(), dim, reinterpret_cast<int8_t*>(values),
                      reinterpret_cast<float*>(params) + r);
      } else {
        QuantizeRowQ4(row.data(), dim, group_size, reinterpret_cast<uint8_t*>(values),
                      reinterpret_cast<uint16_t*>(params) + 2 * r * layout.groups());
      }
    }
  }
  w.data = bytes.data();
  std::vector<double> gflops;
  for (const int tokens : token_counts) {
    ZINF_CHECK(tokens >= 1, "matmul probe of {} tokens", tokens);
    Tensor x = backend.AllocateActivation(tokens, dim);
    Tensor out = backend.AllocateActivation(tokens, dim);
    std::fill_n(static_cast<float*>(x.data), int64_t{tokens} * dim, 0.5f);
    backend.MatMul(x, w, {}, out);  // first touches, kernel choices, packed activations
    // The median pass, not the best: the planner predicts whole runs, and in a guest whose host is
    // shared the best of 3 was an outlier (Emerald Rapids, f16 at 32 tokens: 204 GFLOP/s where
    // Llama-2-13B's layers ran at ~133 and single products at 135-175).
    std::array<double, kMatmulPasses> seconds{};
    for (double& pass_seconds : seconds) {
      // A model's weights outgrow the caches and each step reads each layer's once; a 4096 × 4096
      // matrix would otherwise stay in a large L3 (260 MiB on an Emerald Rapids guest).
      EvictFromCaches(bytes.data(), bytes.size());
      pass_seconds = BestSeconds(1, [&] { backend.MatMul(x, w, {}, out); });
    }
    std::nth_element(seconds.begin(), seconds.begin() + kMatmulPasses / 2, seconds.end());
    gflops.push_back(2.0 * tokens * dim * dim / seconds[kMatmulPasses / 2] / 1e9);
  }
  return gflops;
}

void EvictFromCaches(const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  for (size_t offset = 0; offset < size; offset += 64) _mm_clflush(bytes + offset);
  _mm_mfence();
}

double MeasureAttentionGflops(int num_threads, int context) {
  constexpr int kSequences = 16, kHeads = 32, kKvHeads = 8, kHeadDim = 128;
  constexpr int64_t kQDim = kHeads * kHeadDim, kKvDim = kKvHeads * kHeadDim;
  ThreadPool pool(num_threads);
  // Varied values, so the softmax weights are not all alike; first touched by the pool's threads
  // in the order they attend, as a real cache is filled by the steps that computed it.
  const int64_t slot_floats = int64_t{context} * kKvDim;
  std::unique_ptr<float[]> keys(new float[kSequences * slot_floats]);
  std::unique_ptr<float[]> values(new float[kSequences * slot_floats]);
  pool.ParallelFor(kSequences, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * slot_floats; i < end * slot_floats; ++i) {
      keys[i] = 0.01f * static_cast<float>(i % 97 - 48);
      values[i] = 0.02f * static_cast<float>(i % 89 - 44);
    }
  });
  std::vector<float> queries(kSequences * kQDim), out(kSequences * kQDim);
  for (size_t i = 0; i < queries.size(); ++i) queries[i] = 0.03f * static_cast<float>(i % 31 - 15);
  std::vector<SequenceChunk> chunks(kSequences);
  for (int s = 0; s < kSequences; ++s) chunks[s] = {s, context - 1, 1, s};
  auto slot_rows = [&](const float* base, int slot) {
    KvRows rows;
    rows.f32 = base + slot * slot_floats;
    rows.row_stride = kKvDim;
    rows.num_kv_heads = kKvHeads;
    return rows;
  };
  AttentionArgs args;
  args.chunks = chunks;
  args.q = queries.data();
  args.q_stride = kQDim;
  args.out = out.data();
  args.out_stride = kQDim;
  args.shape = {kHeads, kKvHeads, kHeadDim, 1.0f / std::sqrt(static_cast<float>(kHeadDim))};
  args.k_slot = [&](int slot) { return slot_rows(keys.get(), slot); };
  args.v_slot = [&](int slot) { return slot_rows(values.get(), slot); };
  const double seconds = BestSeconds(3, [&] { CausalAttention(pool, args); });
  return 4.0 * kSequences * kHeads * context * kHeadDim / seconds / 1e9;
}

}  // namespace zinf::cpu
