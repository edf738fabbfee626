// The start-up measurement behind PairTiling: the AVX-512 float kernel's settings timed on one
// small product, once per process.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "cpu/matmul.h"
#include "cpu/matmul_avx512.h"
#include "engine/dtype.h"

namespace zinf::cpu {

namespace {

// The tiling settings timed on one product held in L2 (48 rows × 2048 columns × 64 tokens, the
// rows as wide as a 1B model's), alternating, the best of kTrials each; a setting other than the
// default must win by kMargin. Takes ~10 ms once.
PairTiling MeasurePairTiling() {
  constexpr int64_t kRows = 48, kCols = 2048, kTokens = 64;
  constexpr int kTrials = 9;
  constexpr double kMargin = 1.03;
  std::vector<float> f32(kRows * kCols), x(kTokens * kCols), out(kTokens * kRows);
  uint32_t state = 1;
  auto next_value = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
  };
  for (float& v : f32) v = next_value();
  for (float& v : x) v = next_value();
  std::vector<uint16_t> f16(f32.size()), bf16(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    f16[i] = F32ToF16(f32[i]);
    bf16[i] = F32ToBf16(f32[i]);
  }
  const uint64_t x_version = NewActivationVersion();
  auto seconds = [&](const Weight& w, const PairTiling& tiling) {
    const auto start = std::chrono::steady_clock::now();
    MatMulRowsAvx512Tiled(x.data(), kCols, kTokens, w, Weight{}, out.data(), kRows, 0, kRows,
                          TokenPairSource{x_version}, tiling);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Whether `other` is faster than `base` on w.
  auto beats = [&](const Weight& w, const PairTiling& base, const PairTiling& other) {
    seconds(w, base);  // packs the token pairs, brings the weights into cache
    double base_best = 1e9, other_best = 1e9;
    for (int i = 0; i < kTrials; ++i) {
      base_best = std::min(base_best, seconds(w, base));
      other_best = std::min(other_best, seconds(w, other));
    }
    spdlog::debug("AVX-512 {} tiling: {:.1f} vs {:.1f} µs", DTypeName(w.dtype), base_best * 1e6,
                  other_best * 1e6);
    return other_best * kMargin < base_best;
  };
  PairTiling tiling;
  PairTiling whole_rows = tiling;
  whole_rows.span_bytes = 0;
  if (beats(Weight{f32.data(), DType::kF32, kRows, kCols, 0}, tiling, whole_rows)) {
    tiling = whole_rows;
  }
  PairTiling widened = tiling;
  widened.widen_f16 = true;
  tiling.widen_f16 = beats(Weight{f16.data(), DType::kF16, kRows, kCols, 0}, tiling, widened);
  widened = tiling;
  widened.widen_bf16 = true;
  tiling.widen_bf16 = beats(Weight{bf16.data(), DType::kBF16, kRows, kCols, 0}, tiling, widened);
  spdlog::debug("AVX-512 float products: {}, f16 {}, bf16 {}",
                tiling.span_bytes > 0 ? "rows in spans" : "whole rows",
                tiling.widen_f16 ? "widened per span" : "converted per tile",
                tiling.widen_bf16 ? "widened per span" : "converted per tile");
  return tiling;
}

// Set only while no product runs (PinPairTiling's contract): the pool publishes each task with a
// release on its generation counter, which its threads acquire, so the write is seen by them.
std::optional<PairTiling> g_pinned;

}  // namespace

PairTiling CurrentPairTiling() {
  if (g_pinned) return *g_pinned;
  static const PairTiling measured = MeasurePairTiling();
  return measured;
}

void PinPairTiling(std::optional<PairTiling> tiling) { g_pinned = tiling; }

}  // namespace zinf::cpu
