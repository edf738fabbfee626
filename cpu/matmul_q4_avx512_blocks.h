// The AVX-512 int4 kernels' block steps (cpu/matmul_q4_avx512.cpp and its decode tiles): a
// block's nibbles unpacked to bytes, a token's block broadcast, the next tile prefetched.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/quantized.h"

namespace zinf::cpu::q4_avx512 {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source, which
// -W(maybe-)uninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#ifndef ZINF_Q4_INLINE
#define ZINF_Q4_INLINE inline __attribute__((always_inline))
#endif

// Block `b` of rows a and b as [a's 32 nibbles | b's 32 nibbles], one byte each: the 16 bytes of
// each row in two 128-bit lanes, the second shifted right by 4 (16-bit shifts; the mask drops the
// neighbour byte's bits).
ZINF_Q4_INLINE __m512i UnpackPair(const uint8_t* a, const uint8_t* b, int64_t block) {
  const __m512i shifts = _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0, 0,
                                          0x0004000400040004, 0x0004000400040004, 0, 0);
  __m512i both =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16 * block)));
  both = _mm512_mask_broadcast_i32x4(
      both, 0xff00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * block)));
  return _mm512_and_si512(_mm512_srlv_epi16(both, shifts), _mm512_set1_epi8(0x0f));
}

// Group g's share of the next row tile: its nibbles (from `next`, its first row) and its
// parameters (from `next_params`, its first row's).
template <int kRows, int kBlocks>
ZINF_Q4_INLINE void PrefetchGroupShare(const uint8_t* next, const uint16_t* next_params,
                                       int64_t g) {
  const char* nibbles = reinterpret_cast<const char*>(next) + g * kRows * kBlocks * 16;
#pragma GCC unroll 16
  for (int line = 0; line < (kRows * kBlocks * 16 + 63) / 64; ++line)
    _mm_prefetch(nibbles + 64 * line, _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(next_params) + g * kRows * 4, _MM_HINT_T0);
}

// Block b of a token's int8 values (from x), in both 256-bit halves.
ZINF_Q4_INLINE __m512i BroadcastTokenBlock(const int8_t* x, int b) {
  return _mm512_broadcast_i64x4(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + b * kQ4BlockElements)));
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace zinf::cpu::q4_avx512
