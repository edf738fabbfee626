// Whether one-token products ask for the next row tile with software prefetches. On some CPUs the
// hardware prefetchers alone read the weights faster, on others the requests are what keeps DRAM
// busy, and it differs by kernel, so each process measures it on its first one-token products.
#pragma once

#include <cstdint>

#include "engine/dtype.h"

namespace zinf::cpu {

// How far ahead in its own stream a one-token kernel over rows a stride apart requests each row's
// line (ForEachStridedTile: a row continues into the next tile's). A row further (8 KiB of f32)
// read slower than no requests at all; 1 KiB read 5-6% faster than none (bare 8-row f32 loops
// over 1.1B-shaped matrices, 2 threads, Emerald Rapids guest: 34.8 vs 32.8 GB/s; 8 KiB 32.0;
// 256 B 34.4, 4 KiB 34.1).
constexpr int64_t kStreamPrefetchBytes = 1024;

// Whether a kernel for `weights` multiplying `tokens` tokens prefetches the next row tile: always
// for several (measured faster with the requests on every CPU tried), and for one what the
// measurement below set (on until it says otherwise).
bool PrefetchNextTile(DType weights, int64_t tokens);

// One timed product: which setting it ran with, and which measurement it belongs to (none when
// that weight type and row width are decided).
struct PrefetchTrial {
  int key = -1;
  bool prefetch = true;
};

// Sets PrefetchNextTile(weights) for the coming one-token product over rows of `cols` values: the
// first products of each weight type and row width alternate off and on; once each setting has
// been timed a few times the faster one (median bytes per second) stays. Thread-safe.
PrefetchTrial BeginOneTokenProduct(DType weights, int64_t cols);
void EndOneTokenProduct(const PrefetchTrial& trial, double seconds, double weight_bytes);

}  // namespace zinf::cpu
