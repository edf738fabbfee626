// What the AVX2 int8 prefill tile can reach on this core, held in L1/L2 so that only its
// instructions count: zinf's tile (cpu/matmul_i8_avx2_lanes.cpp: int16 pairs, madd, 3 rows × 16
// tokens) against the ways around a single integer multiplier pipe (Zen 1 issues one 256-bit
// madd every 2 cycles): the same block sums as f32 FMAs of integer-valued floats (exact: |w|,
// |x| ≤ 128, 32 products < 2^24), tiles mixing madd rows and FMA rows, and int8 weights
// sign-extended per step instead of a widened copy. Prints GOP/s (2 per product) per tile, best
// of 7 timings, each kind in turn, twice.
// Not part of the build; from the repository root, on a machine with AVX2 and FMA:
//   g++ -std=c++20 -O2 bench/avx2_int8_tile_ceiling.cpp -o /tmp/avx2_int8_tile_ceiling
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kCols = 2048, kBlocks = kCols / 32, kTokens = 16, kMaxRows = 4;

// Activations in token lanes: per block, 16 steps of 16 tokens' int16 pairs (zinf's layout), and
// the same values as floats, 32 steps of 16 tokens; weights widened to int16, as int8, as floats.
alignas(64) int16_t x_pairs[kBlocks * 16 * 32];
alignas(64) float x_floats[kBlocks * 32 * 16];
alignas(64) int16_t w_int16[kMaxRows * kCols];
alignas(64) int8_t w_int8[kMaxRows * kCols];
alignas(64) float w_floats[kMaxRows * kCols];
alignas(64) float token_scales[kBlocks * 16];
alignas(64) float accumulators[kMaxRows * kTokens];

// kMadd rows by int16 madd (kDirect: from the int8 weights, sign-extended per step), then kFma
// rows by f32 FMA; per block the exact sums are scaled into `accumulators` (kept in memory, so
// that every mix fits the 16 registers).
template <int kMadd, int kFma, bool kDirect>
__attribute__((target("avx2,fma"), noinline)) void Tile() {
  for (float& a : accumulators) a = 0;
  for (int b = 0; b < kBlocks; ++b) {
    const auto* x = reinterpret_cast<const __m256i*>(x_pairs + b * 512);
    const float* xf = x_floats + b * 512;
    __m256i sums[kMadd > 0 ? kMadd : 1][2];
    __m256 float_sums[kFma > 0 ? kFma : 1][2];
    for (auto& s : sums) s[0] = s[1] = _mm256_setzero_si256();
    for (auto& s : float_sums) s[0] = s[1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int j = 0; j < 16; ++j) {
      const __m256i low = _mm256_load_si256(x + 2 * j), high = _mm256_load_si256(x + 2 * j + 1);
#pragma GCC unroll 8
      for (int r = 0; r < kMadd; ++r) {
        __m256i pair;
        if constexpr (kDirect) {
          int16_t bytes;
          std::memcpy(&bytes, w_int8 + r * kCols + b * 32 + 2 * j, 2);
          pair = _mm256_cvtepi8_epi16(_mm_set1_epi16(bytes));
        } else {
          int32_t words;
          std::memcpy(&words, w_int16 + r * kCols + b * 32 + 2 * j, 4);
          pair = _mm256_set1_epi32(words);
        }
        sums[r][0] = _mm256_add_epi32(sums[r][0], _mm256_madd_epi16(pair, low));
        sums[r][1] = _mm256_add_epi32(sums[r][1], _mm256_madd_epi16(pair, high));
      }
#pragma GCC unroll 2
      for (int c = 0; c < (kFma > 0 ? 2 : 0); ++c) {
        const __m256 low_f = _mm256_load_ps(xf + 16 * (2 * j + c));
        const __m256 high_f = _mm256_load_ps(xf + 16 * (2 * j + c) + 8);
#pragma GCC unroll 8
        for (int r = 0; r < kFma; ++r) {
          const __m256 weight = _mm256_broadcast_ss(w_floats + r * kCols + b * 32 + 2 * j + c);
          float_sums[r][0] = _mm256_fmadd_ps(weight, low_f, float_sums[r][0]);
          float_sums[r][1] = _mm256_fmadd_ps(weight, high_f, float_sums[r][1]);
        }
      }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256 scales = _mm256_load_ps(token_scales + b * 16 + 8 * h);
#pragma GCC unroll 8
      for (int r = 0; r < kMadd + kFma; ++r) {
        float* a = accumulators + r * kTokens + 8 * h;
        const __m256 sum = r < kMadd ? _mm256_cvtepi32_ps(sums[r][h]) : float_sums[r - kMadd][h];
        _mm256_store_ps(a, _mm256_fmadd_ps(sum, scales, _mm256_load_ps(a)));
      }
    }
  }
}

// The bare instruction rates in the tiles' unit (2 ops per product): 12 independent chains of
// 256-bit FMAs (8 products each) or of madds (16 each), so that only the pipes bound them.
template <bool kMaddChains>
__attribute__((target("avx2,fma"), noinline)) double PeakGops() {
  constexpr int kChains = 12, kSteps = 1 << 20;
  __m256 f[kChains];
  __m256i m[kChains];
  for (int c = 0; c < kChains; ++c) {
    f[c] = _mm256_set1_ps(1.0f + c);
    m[c] = _mm256_set1_epi16(static_cast<int16_t>(c + 1));
  }
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  const __m256i ones = _mm256_set1_epi16(1);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSteps; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) {
      if constexpr (kMaddChains) {
        m[c] = _mm256_madd_epi16(m[c], ones);
      } else {
        f[c] = _mm256_fmadd_ps(f[c], a, b);
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  float sink = 0;
  for (int c = 0; c < kChains; ++c) sink += f[c][0] + static_cast<float>(m[c][0]);
  if (sink == 12345.0f) std::printf(" ");
  const double ops_per_instruction = kMaddChains ? 32 : 16;
  return ops_per_instruction * kChains * kSteps / seconds / 1e9;
}

template <int kMadd, int kFma, bool kDirect = false>
double GopsPerSecond() {
  constexpr int kRepeats = 2000;
  double best = 1e30;
  for (int trial = 0; trial < 7; ++trial) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRepeats; ++i) Tile<kMadd, kFma, kDirect>();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds < best) best = seconds;
  }
  return 2.0 * (kMadd + kFma) * kTokens * kCols * kRepeats / best / 1e9;
}

}  // namespace

int main() {
  srand(1);
  for (auto& v : x_pairs) v = static_cast<int16_t>(rand() % 255 - 127);
  for (auto& v : x_floats) v = static_cast<float>(rand() % 255 - 127);
  for (int i = 0; i < kMaxRows * kCols; ++i) {
    w_int8[i] = static_cast<int8_t>(rand() % 255 - 127);
    w_int16[i] = w_int8[i];
    w_floats[i] = w_int8[i];
  }
  for (auto& s : token_scales) s = 0.01f;
  for (int round = 0; round < 2; ++round) {
    std::printf("round %d: bare 256-bit FMAs %.1f, bare madds %.1f GOP/s\n", round + 1,
                PeakGops<false>(), PeakGops<true>());
    std::printf("GOP/s of a tile of 16 tokens x %d columns:\n", kCols);
    std::printf("  3 rows by madd (zinf's tile)              %6.1f\n", GopsPerSecond<3, 0>());
    std::printf("  3 rows by madd, int8 sign-extended a step %6.1f\n", GopsPerSecond<3, 0, true>());
    std::printf("  4 rows by madd                            %6.1f\n", GopsPerSecond<4, 0>());
    std::printf("  3 rows by f32 FMA                         %6.1f\n", GopsPerSecond<0, 3>());
    std::printf("  2 rows by madd + 1 by FMA                 %6.1f\n", GopsPerSecond<2, 1>());
    std::printf("  3 rows by madd + 1 by FMA                 %6.1f\n", GopsPerSecond<3, 1>());
    std::printf("  2 rows by madd + 2 by FMA                 %6.1f\n", GopsPerSecond<2, 2>());
  }
}
