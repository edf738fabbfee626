// The AVX-512 int4 kernel's tile for a few tokens (2-8) in the lanes of 256-bit registers, used by
// cpu/matmul_q4_avx512.cpp where the start-up probe finds it faster than the 16-row tiles (Zen 4,
// whose 512-bit operations are two 256-bit halves). LaneTile's arithmetic per row and token, so
// the same bits.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/matmul_q4_avx512_tiles.h"
#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "engine/quantized.h"

namespace zinf::cpu::q4_avx512 {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// Up to 8 tokens' int8 values with the tokens in the lanes: per block of 32 values, 8 rows of 32
// bytes, row k4 holding in lane t (bytes 4t..4t+3) token t's values 4·k4..4·k4+3 (0 past the
// tokens). The layout of cpu/q8_token_lanes.h at half its width.
struct YmmTokenLanes {
  static constexpr int kLanes = 8;
  static constexpr int64_t kBlockBytes = 8 * 32;
  const uint8_t* data = nullptr;

  const uint8_t* block(int64_t b) const { return data + b * kBlockBytes; }
};

// Packs tokens [token, token + count) (count ≤ 8) of xa into `out` (64-byte aligned,
// xa.groups · xa.group_size / 32 · kBlockBytes bytes).
inline YmmTokenLanes PackYmmTokenLanes(const Q4Activations& xa, int64_t token, int count,
                                       uint8_t* out) {
  const int64_t blocks = xa.groups * xa.group_size / kQ4BlockElements;
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = out + b * YmmTokenLanes::kBlockBytes;
    if (count < YmmTokenLanes::kLanes) std::memset(block, 0, YmmTokenLanes::kBlockBytes);
    for (int t = 0; t < count; ++t) {
      const int8_t* values = xa.token_values(token + t) + b * kQ4BlockElements;
#pragma GCC unroll 8
      for (int k4 = 0; k4 < 8; ++k4) std::memcpy(block + 32 * k4 + 4 * t, values + 4 * k4, 4);
    }
  }
  return YmmTokenLanes{out};
}

// Rows [row, row + kRows) (prepared in `unpacked`) × tokens [token, token + tokens) in `lanes`;
// `prefetch`, when set, asks for the next kRows rows. Per group, a dword of each row's values broadcast against the
// tokens' dwords leaves the row's group sums in the token lanes, no reduction needed; then the
// portable chain's float steps, lane by lane.
template <int kRows>
void YmmLaneTile(const YmmTokenLanes& lanes, const Q4Activations& xa, int64_t token, int tokens,
                 const UnpackedQ4Rows& unpacked, const QuantRows& w, int64_t row, bool prefetch,
                 float (&results)[kRows][8]) {
  const auto token_mask = static_cast<__mmask8>((1u << tokens) - 1);
  const int64_t blocks_per_group = xa.group_size / kQ4BlockElements;
  __m256 acc[kRows], minimums[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r] = minimums[r] = _mm256_setzero_ps();
  for (int64_t g = 0; g < xa.groups; ++g) {
    if (prefetch) {
      PrefetchRegionShare(w.row(row + kRows), kRows * w.row_bytes, g, xa.groups);
      PrefetchRegionShare(w.q4_params(row + kRows), kRows * w.groups * 4, g, xa.groups);
    }
    __m256i sums[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) sums[r] = _mm256_setzero_si256();
    for (int64_t b = g * blocks_per_group; b < (g + 1) * blocks_per_group; ++b) {
      const uint8_t* values = lanes.block(b);
#pragma GCC unroll 8
      for (int k4 = 0; k4 < 8; ++k4) {
        const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(values + 32 * k4));
#pragma GCC unroll 16
        for (int r = 0; r < kRows; ++r) {
          int32_t nibbles;
          std::memcpy(&nibbles, unpacked.row(r) + b * kQ4BlockElements + 4 * k4, 4);
          sums[r] = _mm256_dpbusd_epi32(sums[r], _mm256_set1_epi32(nibbles), x);
        }
      }
    }
    const __m256 token_scales =
        _mm256_maskz_loadu_ps(token_mask, xa.scales + g * xa.tokens + token);
    const __m256 min_factors = _mm256_maskz_loadu_ps(token_mask, xa.group_min_factors(g) + token);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const float* params = unpacked.row_params(r) + 2 * g;
      const __m256 factors = _mm256_mul_ps(_mm256_set1_ps(params[0]), token_scales);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r]), factors, acc[r]);
      minimums[r] = _mm256_fmadd_ps(_mm256_set1_ps(params[1]), min_factors, minimums[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) _mm256_storeu_ps(results[r], _mm256_add_ps(acc[r], minimums[r]));
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace zinf::cpu::q4_avx512
