// The register tiles of the AVX-512 int8 kernel (cpu_matmul_i8_avx512.cpp, its only includer):
// kRows weight rows × kTokens tokens, two rows' 32-byte blocks per zmm, [row r | row r+1], against
// one token's activation block broadcast to both halves. Each 256-bit half runs exactly the
// portable chain of its row: per block, the 8 exact int32 lane sums of 4 products (vpdpbusd: no
// saturation, so the same sums as AVX2's maddubs+madd), then fma(float(sum), block scale, lane),
// block after block, then the fixed lane reduction.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/q8_activations.h"
#include "cpu/quant_rows.h"
#include "engine/quantized.h"

namespace zinf::cpu::i8_avx512 {

// The batch tile's tokens, packed once per call so that a tile walks one pointer: per group of
// kGroup tokens and per block, a record of each token's 32 values, its 8 int32 offsets (−128 ×
// the sum of each lane's 4 values) and its scale.
template <int kGroup>
struct PackedRecord {
  static constexpr int64_t kOffsets = kGroup * 32;
  static constexpr int64_t kScales = kGroup * 64;
  static constexpr int64_t kBytes = kGroup * 68;
};

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source, which
// -W(maybe-)uninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define ZINF_I8_INLINE inline __attribute__((always_inline))

// Most bytes of a tile's rows whose successor is prefetched into L1 (48 KiB) rather than L2.
constexpr int64_t kPrefetchL1Bytes = 16 << 10;

// [block at a | block at b]. The masked form reads only the bytes of a partial last block (rows
// are not padded) and zeroes the rest.
ZINF_I8_INLINE __m512i LoadRowPair(const int8_t* a, const int8_t* b) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}
ZINF_I8_INLINE __m512i LoadRowPairMasked(const int8_t* a, const int8_t* b, __mmask32 mask) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi8(mask, a)),
                            _mm256_maskz_loadu_epi8(mask, b), 1);
}

// The fixed lane reduction ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) of each 256-bit half (fp add
// is commutative, so the operands' order inside each sum does not matter).
ZINF_I8_INLINE void ReduceHalves(__m512 acc, float& low, float& high) {
  const __m512 a = _mm512_add_ps(acc, _mm512_shuffle_f32x4(acc, acc, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512 b = _mm512_add_ps(a, _mm512_permute_ps(a, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 c = _mm512_add_ps(b, _mm512_permute_ps(b, _MM_SHUFFLE(2, 3, 0, 1)));
  low = _mm512_cvtss_f32(c);
  high = _mm_cvtss_f32(_mm512_extractf32x4_ps(c, 2));
}

// The same reduction of 8 accumulators at once, by shuffles that pair up lanes of different
// accumulators: the same sums, in the same grouping. Lane 4c + e of the result holds accumulator
// 2e + c / 2, half c % 2.
ZINF_I8_INLINE __m512 AddHalves(__m512 a, __m512 b) {  // l_i + l_{i+4}
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}
ZINF_I8_INLINE __m512 AddPairs(__m512 a, __m512 b) {  // s04 + s26, s15 + s37
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}
ZINF_I8_INLINE __m512 AddLast(__m512 a, __m512 b) {  // (s04 + s26) + (s15 + s37)
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}
ZINF_I8_INLINE __m512 ReduceEight(const __m512* acc) {
  return AddLast(AddPairs(AddHalves(acc[0], acc[1]), AddHalves(acc[2], acc[3])),
                 AddPairs(AddHalves(acc[4], acc[5]), AddHalves(acc[6], acc[7])));
}

// Signed tile, any weights (decode, and batch rows holding a −128 byte): the sign trick without
// vpsignb. |x| is the unsigned operand and w, negated in int8 (−128 stays −128) where x < 0, the
// signed one: SignTrickProduct for every x and w (x = 0 gives 0 through |x|).
template <int kPairs, int kTokens>
ZINF_I8_INLINE void SignedBlock(const __m512i (&wv)[kPairs], const Q8Activations& xq, int64_t token,
                                int64_t b, __m512 (&acc)[kPairs][kTokens]) {
  const __m512i zero = _mm512_setzero_si512();
#pragma GCC unroll 16
  for (int t = 0; t < kTokens; ++t) {
    const __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(xq.token_values(token + t) + b * kQ8BlockElements)));
    const __m512i magnitude = _mm512_abs_epi8(xv);
    const __mmask64 negative = _mm512_movepi8_mask(xv);
    const __m512 scale = _mm512_set1_ps(xq.token_scales(token + t)[b]);
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p) {
      const __m512i signed_w = _mm512_mask_sub_epi8(wv[p], negative, zero, wv[p]);
      const __m512i sums = _mm512_dpbusd_epi32(zero, magnitude, signed_w);
      acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, acc[p][t]);
    }
  }
}

// Biased tile, rows without a −128 byte: w + 128 (w ^ 0x80) is the unsigned operand and x the
// signed one, so nothing per token and row but the product: Σ (w + 128)·x − 128·Σx = Σ w·x,
// exact in int32, vpdpbusd starting from the record's offsets. That is the sign trick's product
// for every w but −128.
template <int kPairs, int kTokens, int kGroup>
ZINF_I8_INLINE void BiasedBlock(const __m512i (&wv)[kPairs], const std::byte* record,
                                __m512 (&acc)[kPairs][kTokens]) {
  using Record = PackedRecord<kGroup>;
  __m512i biased[kPairs];
#pragma GCC unroll 16
  for (int p = 0; p < kPairs; ++p) biased[p] = _mm512_xor_si512(wv[p], _mm512_set1_epi8(-128));
#pragma GCC unroll 16
  for (int t = 0; t < kTokens; ++t) {
    const __m512i xv = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(record + 32 * t)));
    const __m512i offset = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(record + Record::kOffsets + 32 * t)));
    const __m512 scale =
        _mm512_set1_ps(*reinterpret_cast<const float*>(record + Record::kScales + 4 * t));
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p) {
      const __m512i sums = _mm512_dpbusd_epi32(offset, biased[p], xv);
      acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, acc[p][t]);
    }
  }
}

// Rows [row, row + kRows) × kTokens tokens into results (× the row scales). An odd last row is
// paired with itself, its second half discarded. `block(wv, b, acc)` multiplies block b;
// `prefetch`, when set, is the next tile's weight region, fetched a block's share at a time.
template <int kRows, int kTokens, typename BlockFn>
ZINF_I8_INLINE void RunRows(const QuantRows& w, int64_t row, const int8_t* prefetch,
                            float (&results)[kRows][kTokens], BlockFn&& block) {
  constexpr int kPairs = (kRows + 1) / 2;
  const int8_t* rows[2 * kPairs];
#pragma GCC unroll 32
  for (int i = 0; i < 2 * kPairs; ++i) rows[i] = w.i8_row(row + std::min(i, kRows - 1));
  __m512 acc[kPairs][kTokens];
#pragma GCC unroll 64
  for (int i = 0; i < kPairs * kTokens; ++i) acc[i / kTokens][i % kTokens] = _mm512_setzero_ps();
  const int64_t whole = w.cols / kQ8BlockElements;
  // Into L1 only while this tile and the next fit there together (decode on narrow rows, which
  // measured faster so: the weights then come from L3); else into L2.
  const bool to_l1 = kTokens == 1 && kRows * w.row_bytes <= kPrefetchL1Bytes;
  for (int64_t b = 0; b < whole; ++b) {
    const int64_t k = b * kQ8BlockElements;
    if (prefetch != nullptr) {
      const char* next = reinterpret_cast<const char*>(prefetch + b * kRows * kQ8BlockElements);
#pragma GCC unroll 16
      for (int line = 0; line < kRows / 2; ++line) {
        if (to_l1) {
          _mm_prefetch(next + 64 * line, _MM_HINT_T0);
        } else {
          _mm_prefetch(next + 64 * line, _MM_HINT_T1);
        }
      }
    }
    __m512i wv[kPairs];
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p) wv[p] = LoadRowPair(rows[2 * p] + k, rows[2 * p + 1] + k);
    block(wv, b, acc);
  }
  if (whole * kQ8BlockElements < w.cols) {
    const int64_t k = whole * kQ8BlockElements;
    const auto mask = static_cast<__mmask32>((uint64_t{1} << (w.cols - k)) - 1);
    __m512i wv[kPairs];
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p)
      wv[p] = LoadRowPairMasked(rows[2 * p] + k, rows[2 * p + 1] + k, mask);
    block(wv, whole, acc);
  }
  // Accumulator i = p × kTokens + t; eight at a time, the rest one by one.
  constexpr int kCount = kPairs * kTokens, kEights = kCount / 8;
  const __m512* flat = &acc[0][0];
  auto put = [&](int i, int half, float sum) __attribute__((always_inline)) {
    const int r = 2 * (i / kTokens) + half;
    if (r < kRows) results[r][i % kTokens] = sum * w.i8_scale(row + r);
  };
#pragma GCC unroll 8
  for (int g = 0; g < kEights; ++g) {
    alignas(64) float sums[16];
    _mm512_store_ps(sums, ReduceEight(flat + 8 * g));
#pragma GCC unroll 16
    for (int lane = 0; lane < 16; ++lane)
      put(8 * g + 2 * (lane % 4) + lane / 8, lane / 4 % 2, sums[lane]);
  }
#pragma GCC unroll 8
  for (int i = 8 * kEights; i < kCount; ++i) {
    float low, high;
    ReduceHalves(flat[i], low, high);
    put(i, 0, low);
    put(i, 1, high);
  }
}

// Tokens [token, token + kTokens) of the quantized activations.
template <int kRows, int kTokens>
void SignedTile(const Q8Activations& xq, int64_t token, const QuantRows& w, int64_t row,
                const int8_t* prefetch, float (&results)[kRows][kTokens]) {
  constexpr int kPairs = (kRows + 1) / 2;
  RunRows<kRows, kTokens>(
      w, row, prefetch, results,
      [&](const __m512i(&wv)[kPairs], int64_t b, __m512(&acc)[kPairs][kTokens])
          __attribute__((always_inline)) { SignedBlock<kPairs, kTokens>(wv, xq, token, b, acc); });
}

// The first kTokens tokens of the group whose first record is `records`.
template <int kRows, int kTokens, int kGroup>
void BiasedTile(const std::byte* records, const QuantRows& w, int64_t row, const int8_t* prefetch,
                float (&results)[kRows][kTokens]) {
  constexpr int kPairs = (kRows + 1) / 2;
  RunRows<kRows, kTokens>(
      w, row, prefetch, results,
      [&](const __m512i(&wv)[kPairs], int64_t b, __m512(&acc)[kPairs][kTokens])
          __attribute__((always_inline)) {
            const std::byte* record = records + b * PackedRecord<kGroup>::kBytes;
            BiasedBlock<kPairs, kTokens, kGroup>(wv, record, acc);
          });
}

#undef ZINF_I8_INLINE
#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace zinf::cpu::i8_avx512
