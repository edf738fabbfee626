// The start-up measurement behind CurrentQ4FewTokens: the AVX-512 int4 kernel's two ways of
// taking 8 tokens timed on one small product per group size, once per process.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cpu/matmul_q4_avx512.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// The two settings timed on one product held in L2 (256 rows × 2048 columns × 8 tokens, the rows as
// wide as a 1B model's), alternating, the best of kTrials each; the token lanes must win by
// kMargin. Takes a few ms once per group size.
Q4FewTokens MeasureQ4FewTokens(int group_size) {
  constexpr int64_t kRows = 256, kCols = 2048, kTokens = 8;
  constexpr int kTrials = 15;
  constexpr double kMargin = 1.03;
  uint32_t state = 1;
  auto next_value = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
  };
  std::vector<float> values(kRows * kCols), x(kTokens * kCols), out(kTokens * kRows);
  for (float& v : values) v = next_value();
  for (float& v : x) v = next_value();
  const QuantLayout layout = LayoutOf(DType::kQ4, kRows, kCols, group_size);
  std::vector<std::byte> bytes(layout.total_bytes());
  for (int64_t r = 0; r < kRows; ++r) {
    QuantizeRowQ4(&values[r * kCols], kCols, group_size,
                  reinterpret_cast<uint8_t*>(bytes.data() + r * layout.row_bytes()),
                  reinterpret_cast<uint16_t*>(bytes.data() + layout.scales_offset()) +
                      r * layout.groups() * 2);
  }
  const QuantRows w(Weight{bytes.data(), DType::kQ4, kRows, kCols, group_size});
  const Q4Activations xa = PrepareQ4Activations(x.data(), kCols, kTokens, kCols, group_size,
                                                /*use_avx2=*/true);
  auto seconds = [&](Q4FewTokens setting) {
    const auto start = std::chrono::steady_clock::now();
    MatMulQ4Avx512With(xa, 0, kTokens, w, Weight{}, out.data(), kRows, 0, kRows, setting);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  seconds(Q4FewTokens::kRowTiles);  // brings the weights into cache, grows the scratch buffers
  seconds(Q4FewTokens::kYmmLanes);
  double tiles_best = 1e9, lanes_best = 1e9;
  for (int i = 0; i < kTrials; ++i) {
    tiles_best = std::min(tiles_best, seconds(Q4FewTokens::kRowTiles));
    lanes_best = std::min(lanes_best, seconds(Q4FewTokens::kYmmLanes));
  }
  const bool lanes = lanes_best * kMargin < tiles_best;
  spdlog::debug("AVX-512 int4, groups of {}, 8 tokens: 16-row tiles {:.1f} µs, 256-bit token "
                "lanes {:.1f} µs: {}",
                group_size, tiles_best * 1e6, lanes_best * 1e6, lanes ? "lanes" : "tiles");
  return lanes ? Q4FewTokens::kYmmLanes : Q4FewTokens::kRowTiles;
}

// Set only while no product runs (PinQ4FewTokens' contract): the pool publishes each task with a
// release on its generation counter, which its threads acquire, so the write is seen by them.
std::optional<Q4FewTokens> g_pinned;

}  // namespace

Q4FewTokens CurrentQ4FewTokens(int group_size) {
  if (g_pinned) return *g_pinned;
  // Group sizes 32, 64 and 128, the ones the converter writes.
  static std::array<std::once_flag, 3> once;
  static std::array<Q4FewTokens, 3> measured;
  const int index = group_size <= 32 ? 0 : group_size <= 64 ? 1 : 2;
  std::call_once(once[index], [index] {
    // On a thread of its own: the product asking is mid-call on this one, and the measurement's
    // would reuse its thread-local activations and scratch buffers.
    std::thread([index] { measured[index] = MeasureQ4FewTokens(32 << index); }).join();
  });
  return measured[index];
}

void PinQ4FewTokens(std::optional<Q4FewTokens> setting) { g_pinned = setting; }

}  // namespace zinf::cpu
