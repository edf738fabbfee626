// The AVX-512 int4 kernel's token-lane tile, at either register width: 16 tokens in the lanes of
// a zmm (more than 8 tokens), or 8 in a ymm (7-8 tokens where the start-up probe finds that faster
// than the 16-row tiles: Zen 4, whose 512-bit operations are two 256-bit halves). One row's
// nibble dword broadcast against the tokens' dwords leaves its group sums in the token lanes, no
// reduction needed; then the portable chain's float steps lane by lane, so both widths give the
// same bits.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/matmul_q4_avx512_tiles.h"
#include "cpu/prefetch_region.h"
#include "cpu/q4_activations.h"
#include "cpu/quant_rows.h"
#include "engine/quantized.h"

namespace zinf::cpu::q4_avx512 {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// The operations the tile needs at kLanes token lanes.
template <int kLanes>
struct LaneOps;

template <>
struct LaneOps<16> {
  using Ints = __m512i;
  using Floats = __m512;
  ZINF_Q4_INLINE static Ints Zero() { return _mm512_setzero_si512(); }
  ZINF_Q4_INLINE static Ints Load(const std::byte* p) { return _mm512_load_si512(p); }
  ZINF_Q4_INLINE static Ints Dot(Ints sum, int32_t nibbles, Ints x) {
    return _mm512_dpbusd_epi32(sum, _mm512_set1_epi32(nibbles), x);
  }
  ZINF_Q4_INLINE static Floats ZeroFloats() { return _mm512_setzero_ps(); }
  ZINF_Q4_INLINE static Floats LoadFirst(int count, const float* p) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1), p);
  }
  ZINF_Q4_INLINE static Floats Broadcast(float v) { return _mm512_set1_ps(v); }
  ZINF_Q4_INLINE static Floats Mul(Floats a, Floats b) { return _mm512_mul_ps(a, b); }
  ZINF_Q4_INLINE static Floats Fma(Floats a, Floats b, Floats c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  ZINF_Q4_INLINE static Floats ToFloats(Ints v) { return _mm512_cvtepi32_ps(v); }
  ZINF_Q4_INLINE static void StoreSum(float* p, Floats a, Floats b) {
    _mm512_storeu_ps(p, _mm512_add_ps(a, b));
  }
};

template <>
struct LaneOps<8> {
  using Ints = __m256i;
  using Floats = __m256;
  ZINF_Q4_INLINE static Ints Zero() { return _mm256_setzero_si256(); }
  ZINF_Q4_INLINE static Ints Load(const std::byte* p) {
    return _mm256_load_si256(reinterpret_cast<const Ints*>(p));
  }
  ZINF_Q4_INLINE static Ints Dot(Ints sum, int32_t nibbles, Ints x) {
    return _mm256_dpbusd_epi32(sum, _mm256_set1_epi32(nibbles), x);
  }
  ZINF_Q4_INLINE static Floats ZeroFloats() { return _mm256_setzero_ps(); }
  ZINF_Q4_INLINE static Floats LoadFirst(int count, const float* p) {
    return _mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << count) - 1), p);
  }
  ZINF_Q4_INLINE static Floats Broadcast(float v) { return _mm256_set1_ps(v); }
  ZINF_Q4_INLINE static Floats Mul(Floats a, Floats b) { return _mm256_mul_ps(a, b); }
  ZINF_Q4_INLINE static Floats Fma(Floats a, Floats b, Floats c) {
    return _mm256_fmadd_ps(a, b, c);
  }
  ZINF_Q4_INLINE static Floats ToFloats(Ints v) { return _mm256_cvtepi32_ps(v); }
  ZINF_Q4_INLINE static void StoreSum(float* p, Floats a, Floats b) {
    _mm256_storeu_ps(p, _mm256_add_ps(a, b));
  }
};

// Up to 8 tokens' int8 values with the tokens in the lanes: per block of 32 values, 8 rows of 32
// bytes, row k4 holding in lane t (bytes 4t..4t+3) token t's values 4·k4..4·k4+3 (0 past the
// tokens). The layout of cpu/q8_token_lanes.h at half its width.
struct YmmTokenLanes {
  static constexpr int kLanes = 8;
  static constexpr int64_t kBlockBytes = 8 * 32;
  const std::byte* data = nullptr;
};

// Packs tokens [token, token + count) (count ≤ 8) of xa into `out` (64-byte aligned,
// xa.groups · xa.group_size / 32 · kBlockBytes bytes).
inline YmmTokenLanes PackYmmTokenLanes(const Q4Activations& xa, int64_t token, int count,
                                       std::byte* out) {
  const int64_t blocks = xa.groups * xa.group_size / kQ4BlockElements;
  for (int64_t b = 0; b < blocks; ++b) {
    std::byte* block = out + b * YmmTokenLanes::kBlockBytes;
    if (count < YmmTokenLanes::kLanes) std::memset(block, 0, YmmTokenLanes::kBlockBytes);
    for (int t = 0; t < count; ++t) {
      const int8_t* values = xa.token_values(token + t) + b * kQ4BlockElements;
#pragma GCC unroll 8
      for (int k4 = 0; k4 < 8; ++k4) std::memcpy(block + 32 * k4 + 4 * t, values + 4 * k4, 4);
    }
  }
  return YmmTokenLanes{out};
}

// A tile's tokens' per-group factors (Q4Activations' scales and minimum factors): group g's
// at scales + g · stride and minimums + g · stride, one per token. Passed by reference, as
// TileRows (matmul_q4_avx512_tiles.h): by value GCC's copy failed a store forward per tile.
struct LaneFactors {
  const float* scales;
  const float* minimums;
  int64_t stride;
};

// The factors of tokens [token, ...) where Q4Activations keeps them ([groups][tokens]): fine for a
// few tokens, but with hundreds each group's are a page apart.
inline LaneFactors GroupMajorFactors(const Q4Activations& xa, int64_t token) {
  return {xa.scales + token, xa.min_factors + token, xa.tokens};
}

// Rows [row, row + kRows) (prepared in `unpacked`) × the `tokens` tokens whose values are in
// kLanes lanes, block b's at `values` + b · 8 · 4 · kLanes, and whose factors `factors`
// gives; `prefetch`, when set, asks for the next kRows rows.
template <int kRows, int kLanes>
void TokenLaneTile(const std::byte* values, const Q4Activations& xa, const LaneFactors& factors,
                   int tokens, const UnpackedQ4Rows& unpacked, const QuantRows& w, int64_t row,
                   bool prefetch, float (&results)[kRows][kLanes]) {
  using Ops = LaneOps<kLanes>;
  constexpr int64_t kBlockBytes = 8 * 4 * kLanes;
  const int64_t blocks_per_group = xa.group_size / kQ4BlockElements;
  typename Ops::Floats acc[kRows], minimums[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r] = minimums[r] = Ops::ZeroFloats();
  for (int64_t g = 0; g < xa.groups; ++g) {
    if (prefetch) {
      PrefetchRegionShare(w.row(row + kRows), kRows * w.row_bytes, g, xa.groups);
      PrefetchRegionShare(w.q4_params(row + kRows), kRows * w.groups * 4, g, xa.groups);
    }
    typename Ops::Ints sums[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) sums[r] = Ops::Zero();
    for (int64_t b = g * blocks_per_group; b < (g + 1) * blocks_per_group; ++b) {
#pragma GCC unroll 8
      for (int k4 = 0; k4 < 8; ++k4) {
        const auto x = Ops::Load(values + b * kBlockBytes + 4 * kLanes * k4);
#pragma GCC unroll 16
        for (int r = 0; r < kRows; ++r) {
          int32_t nibbles;
          std::memcpy(&nibbles, unpacked.row(r) + b * kQ4BlockElements + 4 * k4, 4);
          sums[r] = Ops::Dot(sums[r], nibbles, x);
        }
      }
    }
    const auto token_scales = Ops::LoadFirst(tokens, factors.scales + g * factors.stride);
    const auto min_factors = Ops::LoadFirst(tokens, factors.minimums + g * factors.stride);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const float* params = unpacked.row_params(r) + 2 * g;
      const auto products_scales = Ops::Mul(Ops::Broadcast(params[0]), token_scales);
      acc[r] = Ops::Fma(Ops::ToFloats(sums[r]), products_scales, acc[r]);
      minimums[r] = Ops::Fma(Ops::Broadcast(params[1]), min_factors, minimums[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) Ops::StoreSum(results[r], acc[r], minimums[r]);
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace zinf::cpu::q4_avx512
