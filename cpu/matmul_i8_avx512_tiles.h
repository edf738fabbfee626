// The register tiles of the AVX-512 int8 kernel (cpu/matmul_i8_avx512.cpp, its only includer).
// Row pairs (a few tokens): two rows' 32-byte blocks per zmm, [row r | row r+1], against one
// token's block broadcast to both halves; vpdpbusd leaves 8 lane sums of 4 products per half, and
// eight such registers are reduced together into 16 exact block sums. Token lanes (more tokens):
// 15 tokens in the lanes (cpu/q8_token_lanes.h) against a weight dword broadcast from memory, so
// 8 vpdpbusd leave the 15 block sums of one row, with no reduction at all. Either way, per block,
// fma(float(block sum), block scale, acc): the portable chain.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/q8_activations.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/quant_rows.h"
#include "cpu/reduce_avx512.h"
#include "cpu/tile_prefetch.h"
#include "engine/quantized.h"

namespace zinf::cpu::i8_avx512 {

// The row-pair tiles' tokens (at most kGroup), packed once per call so that a tile walks one
// pointer: per block, a record of each token's 32 values, its 8 int32 offsets (−128 × the sum of
// each lane's 4 values) and its scale.
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

// The block sums of kPairs row pairs × kTokens tokens: w + 128 (w ^ 0x80) is the unsigned operand
// and x the signed one, vpdpbusd starting from the record's −128 · Σx lane offsets, so each sum is
// Σ (w + 128)·x − 128·Σx = Σ w·x, exact for every byte (−128 included). Product a = p · kTokens + t
// goes to sums[a].
template <int kPairs, int kTokens, int kGroup>
ZINF_I8_INLINE void BiasedBlock(const __m512i (&wv)[kPairs], const std::byte* record,
                                __m512i* sums) {
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
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p)
      sums[p * kTokens + t] = _mm512_dpbusd_epi32(offset, biased[p], xv);
  }
}

// Rows row, row + row_step, … (kRows of them) × kTokens tokens (records from `records`, kGroup
// tokens each) into results (× the row scales). An odd last row is paired with itself, its second
// half discarded. A non-zero `prefetch_offset` is how far past each load its line is requested as
// this tile goes: where the next tile reads the same values, or, for rows a stride apart,
// kStreamPrefetchBytes on in the row's own stream.
template <int kRows, int kTokens, int kGroup>
ZINF_I8_INLINE void PairTile(const std::byte* records, const QuantRows& w, int64_t row,
                             int64_t row_step, int64_t prefetch_offset,
                             float (&results)[kRows][kTokens]) {
  using Record = PackedRecord<kGroup>;
  constexpr int kPairs = (kRows + 1) / 2;
  constexpr int kCount = kPairs * kTokens, kGroups = (kCount + 7) / 8;
  const int8_t* rows[2 * kPairs];
#pragma GCC unroll 32
  for (int i = 0; i < 2 * kPairs; ++i) rows[i] = w.i8_row(row + std::min(i, kRows - 1) * row_step);
  __m512 acc[kGroups];
  __m512i token_index[kGroups];
#pragma GCC unroll 8
  for (int g = 0; g < kGroups; ++g) {
    acc[g] = _mm512_setzero_ps();
    alignas(64) int index[16];  // the token whose scale each lane takes
    for (int lane = 0; lane < 16; ++lane) index[lane] = (8 * g + ReducedRegister(lane)) % kTokens;
    token_index[g] = _mm512_load_si512(index);
  }
  const int64_t whole = w.cols / kQ8BlockElements;
  // Into L1 only while this tile and the next fit there together (decode on narrow rows, which
  // measured faster so: the weights then come from L3); else into L2.
  const bool to_l1 = kTokens == 1 && kRows * w.row_bytes <= kPrefetchL1Bytes;
  auto block = [&](const __m512i(&wv)[kPairs], int64_t b) __attribute__((always_inline)) {
    const std::byte* record = records + b * Record::kBytes;
    __m512i sums[kGroups * 8];
    BiasedBlock<kPairs, kTokens, kGroup>(wv, record, sums);
#pragma GCC unroll 8
    for (int i = kCount; i < kGroups * 8; ++i) sums[i] = _mm512_setzero_si512();
    const __m512 token_scales = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << kTokens) - 1),
                                                      record + Record::kScales);
#pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      const __m512 scale = _mm512_permutexvar_ps(token_index[g], token_scales);
      acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ReduceEight(sums + 8 * g)), scale, acc[g]);
    }
  };
  auto prefetch = [&](int64_t k) __attribute__((always_inline)) {
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      const char* next = reinterpret_cast<const char*>(rows[i] + k) + prefetch_offset;
      if (to_l1) {
        _mm_prefetch(next, _MM_HINT_T0);
      } else {
        _mm_prefetch(next, _MM_HINT_T1);
      }
    }
  };
  int64_t b = 0;
  if constexpr (kTokens == 1 && kPairs == 4) {
    // A lone token over 4 pairs fills half of ReduceEight's registers: two blocks (a line of each
    // row) share one reduction. Result lanes 4c + e with e < 2 hold block b's sums, e + 2 block
    // b + 1's of the same row; each lane's chain of fmas stays block by block.
    // In a row's own stream the request's offset is a constant, held in the addressing mode.
    auto line_pairs = [&]<bool kInStream>() __attribute__((always_inline)) {
      for (; b + 2 <= whole; b += 2) {
        const int64_t k = b * kQ8BlockElements;
        if constexpr (kInStream) {
#pragma GCC unroll 16
          for (int i = 0; i < kRows; ++i) {
            _mm_prefetch(reinterpret_cast<const char*>(rows[i] + k) + kStreamPrefetchBytes,
                         _MM_HINT_T0);
          }
        } else if (prefetch_offset != 0) {
          prefetch(k);
        }
        __m512i wv[2][kPairs];
#pragma GCC unroll 16
        for (int p = 0; p < kPairs; ++p) {
          wv[0][p] = LoadRowPair(rows[2 * p] + k, rows[2 * p + 1] + k);
          wv[1][p] = LoadRowPair(rows[2 * p] + k + kQ8BlockElements,
                                 rows[2 * p + 1] + k + kQ8BlockElements);
        }
        const std::byte* record = records + b * Record::kBytes;
        __m512i sums[8];
        BiasedBlock<kPairs, 1, kGroup>(wv[0], record, sums);
        BiasedBlock<kPairs, 1, kGroup>(wv[1], record + Record::kBytes, sums + 4);
        const __m512 both = _mm512_cvtepi32_ps(ReduceEight(sums));
        const __m512 second = _mm512_shuffle_ps(both, both, _MM_SHUFFLE(3, 2, 3, 2));
        const auto* scale = reinterpret_cast<const float*>(record + Record::kScales);
        acc[0] = _mm512_fmadd_ps(both, _mm512_set1_ps(scale[0]), acc[0]);
        acc[0] = _mm512_fmadd_ps(second, _mm512_set1_ps(scale[Record::kBytes / 4]), acc[0]);
      }
    };
    if (prefetch_offset == kStreamPrefetchBytes) {
      line_pairs.template operator()<true>();
    } else {
      line_pairs.template operator()<false>();
    }
  }
  for (; b < whole; ++b) {
    const int64_t k = b * kQ8BlockElements;
    if (prefetch_offset != 0 && b % 2 == 0) prefetch(k);  // a line holds two blocks
    __m512i wv[kPairs];
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p) wv[p] = LoadRowPair(rows[2 * p] + k, rows[2 * p + 1] + k);
    block(wv, b);
  }
  if (whole * kQ8BlockElements < w.cols) {
    const int64_t k = whole * kQ8BlockElements;
    const auto mask = static_cast<__mmask32>((uint64_t{1} << (w.cols - k)) - 1);
    __m512i wv[kPairs];
#pragma GCC unroll 16
    for (int p = 0; p < kPairs; ++p)
      wv[p] = LoadRowPairMasked(rows[2 * p] + k, rows[2 * p + 1] + k, mask);
    block(wv, whole);
  }
  ForEachPairTileLane<kRows, kTokens>(acc, [&](int r, int t, float value) {
    results[r][t] = value * w.i8_scale(row + r * row_step);
  });
}

// Token lanes: rows [row, row + kRows) × the (at most 15) tokens of one group, packed with bias
// 0x80 (x + 128 unsigned) and lane 15 empty. The weights are the signed operand, a dword
// broadcast per vpdpbusd; lane 15 (x = 0, so 128 each) leaves 128 · Σw, the bias to take off.
template <int kRows>
ZINF_I8_INLINE void LaneTile(const Q8TokenLanes& lanes, int64_t group, const QuantRows& w,
                             int64_t row, float (&results)[kRows][16]) {
  const __m512i bias_lane = _mm512_set1_epi32(15);
  __m512 acc[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  auto block = [&](const int8_t* const(&weights)[kRows], int64_t b) __attribute__((always_inline)) {
    const std::byte* values = lanes.block(group, b);
    __m512i xv[8];
#pragma GCC unroll 8
    for (int k4 = 0; k4 < 8; ++k4) xv[k4] = _mm512_load_si512(values + 64 * k4);
    const __m512 scale = _mm512_load_ps(lanes.scales(group, b));
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int k4 = 0; k4 < 8; ++k4) {
        int32_t word;
        std::memcpy(&word, weights[r] + 4 * k4, 4);
        sum = _mm512_dpbusd_epi32(sum, xv[k4], _mm512_set1_epi32(word));
      }
      sum = _mm512_sub_epi32(sum, _mm512_permutexvar_epi32(bias_lane, sum));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, acc[r]);
    }
  };
  const int64_t whole = w.cols / kQ8BlockElements;
  for (int64_t b = 0; b < whole; ++b) {
    const int8_t* weights[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) weights[r] = w.i8_row(row + r) + b * kQ8BlockElements;
    block(weights, b);
  }
  if (whole * kQ8BlockElements < w.cols) {  // rows are not padded: copy the partial block
    const int64_t count = w.cols - whole * kQ8BlockElements;
    alignas(64) int8_t padded[kRows][kQ8BlockElements] = {};
    const int8_t* weights[kRows];
    for (int r = 0; r < kRows; ++r) {
      std::memcpy(padded[r], w.i8_row(row + r) + whole * kQ8BlockElements,
                  static_cast<size_t>(count));
      weights[r] = padded[r];
    }
    block(weights, whole);
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
    _mm512_storeu_ps(results[r], _mm512_mul_ps(acc[r], _mm512_set1_ps(w.i8_scale(row + r))));
}

#undef ZINF_I8_INLINE
#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace zinf::cpu::i8_avx512
