// Integer reductions of AVX-512 registers that hold two rows' lane sums each ([row a | row b], 8
// int32 lanes per half): eight registers reduced together into their 16 halves' totals. Shared by
// the int8 and int4 row-pair tiles, whose block and group sums are these totals.
#pragma once

#include <immintrin.h>

namespace zinf::cpu {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq")

#define ZINF_REDUCE_INLINE inline __attribute__((always_inline))

// Eight registers of [half 0 | half 1] lane sums to one of the 16 halves' totals, by shuffles that
// pair lanes of different registers (integer adds: any grouping gives the same sums). Lane 4c + e
// of the result holds register 2e + c / 2, half c % 2 (ReducedRegister, ReducedHalf).
ZINF_REDUCE_INLINE __m512i AddHalves(__m512i a, __m512i b) {  // l_i + l_{i+4}
  return _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}
template <int kImm>
ZINF_REDUCE_INLINE __m512i Shuffle(__m512i a, __m512i b) {
  return _mm512_castps_si512(
      _mm512_shuffle_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b), kImm));
}
ZINF_REDUCE_INLINE __m512i AddPairs(__m512i a, __m512i b) {
  return _mm512_add_epi32(Shuffle<_MM_SHUFFLE(1, 0, 1, 0)>(a, b),
                          Shuffle<_MM_SHUFFLE(3, 2, 3, 2)>(a, b));
}
ZINF_REDUCE_INLINE __m512i AddLast(__m512i a, __m512i b) {
  return _mm512_add_epi32(Shuffle<_MM_SHUFFLE(2, 0, 2, 0)>(a, b),
                          Shuffle<_MM_SHUFFLE(3, 1, 3, 1)>(a, b));
}
ZINF_REDUCE_INLINE __m512i ReduceEight(const __m512i* v) {
  return AddLast(AddPairs(AddHalves(v[0], v[1]), AddHalves(v[2], v[3])),
                 AddPairs(AddHalves(v[4], v[5]), AddHalves(v[6], v[7])));
}
// Which of ReduceEight's eight registers (and which half) lane `lane` of its result holds.
constexpr int ReducedRegister(int lane) { return 2 * (lane % 4) + lane / 8; }
constexpr int ReducedHalf(int lane) { return lane / 4 % 2; }

// Calls fn(row, token, value) for every product of a row-pair tile (kRows rows, kTokens tokens)
// whose ReduceEight results are in acc: chunk i, lane `lane` holds product a = 8i +
// ReducedRegister(lane) (pair a / kTokens, token a % kTokens), row 2 · pair + ReducedHalf(lane);
// lanes past the products or rows are skipped.
template <int kRows, int kTokens, int kChunks, typename Fn>
ZINF_REDUCE_INLINE void ForEachPairTileLane(const __m512 (&acc)[kChunks], Fn&& fn) {
#pragma GCC unroll 8
  for (int i = 0; i < kChunks; ++i) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[i]);
#pragma GCC unroll 16
    for (int lane = 0; lane < 16; ++lane) {
      const int a = 8 * i + ReducedRegister(lane);
      const int r = 2 * (a / (kTokens)) + ReducedHalf(lane);
      if (a < ((kRows + 1) / 2) * kTokens && r < kRows) fn(r, a % kTokens, lanes[lane]);
    }
  }
}

#undef ZINF_REDUCE_INLINE
#pragma GCC pop_options

}  // namespace zinf::cpu
