// Measures this machine's DRAM read bandwidth and the CPU backend's matmul rate, for the planner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/dtype.h"

namespace zinf::cpu {

// The DRAM read rate of `num_threads` threads of zinf's pool reading a buffer of `bytes` (1 GiB:
// past any cache) as the one-token kernels read weights (8 or 16 sequential streams per thread side
// by side; each thread first-touches the part it reads, as the weights' pages are): one warm-up
// pass, then `passes` timed ones of each way (8 and 16 streams, each with software prefetches and
// without), in turn. The fastest median is the figure the planner and the bench scripts use; its
// passes' spread says how far to trust it.
struct DramReadRate {
  double median_gbps = 0;
  double min_gbps = 0;
  double max_gbps = 0;
  int passes = 0;
  bool software_prefetch = false;  // whether the fastest passes requested lines ahead
  int streams = 0;                 // and how many streams each thread read
};
inline constexpr int64_t kDramProbeBytes = int64_t{1} << 30;
inline constexpr int kDramProbePasses = 9;
DramReadRate MeasureDramRead(int num_threads, int passes = kDramProbePasses,
                             int64_t bytes = kDramProbeBytes);

// Which way MeasureDramRead reads, stored with the calibration it made: a cache from another
// probe is remeasured rather than trusted (an older one read slower than the kernels stream).
inline constexpr int kDramProbeVersion = 3;

// The CPU backend's matmul rate (GFLOP/s) multiplying each of `token_counts` tokens by a `dim` ×
// `dim` weight (4096 × 4096: a 7B model's attention projections) stored as `weights` (f32, f16,
// int8, or int4 in groups of `group_size`), read from DRAM (the weight is evicted from the caches
// before each pass); each the median of 5 after a warm-up.
inline constexpr int kMatmulProbeDim = 4096;
std::vector<double> MeasureMatmulGflops(int num_threads, DType weights,
                                        std::span<const int> token_counts, int group_size = 64,
                                        int dim = kMatmulProbeDim);

// Writes `size` bytes from `data` back and drops them from every cache level, so that the next
// pass reads them from DRAM (as a model's weights are read, or a staging buffer a read just filled).
void EvictFromCaches(const void* data, size_t size);

// The CPU backend's attention rate in decode steps: 16 sequences, one query token each, over
// `context` positions of an f32 KV cache in DRAM (1024: 128 MiB), 32 query heads sharing 8 KV heads
// of 128 dimensions (Llama-2-70B's and Llama-3's grouping); 4 · head_dim FLOPs per query head and
// key (the scores and the weighted values). Best of 3.
inline constexpr int kAttentionProbeContext = 1024;
double MeasureAttentionGflops(int num_threads, int context = kAttentionProbeContext);

}  // namespace zinf::cpu
