// int8 dot-product kernels, an AVX2/FMA version and a portable one with the same arithmetic, and
// the dispatch to the int4 kernels (cpu/matmul_q4.h). int8: the activations are quantized in
// blocks of 32 (cpu/q8_activations.h); per block the exact int32 sum of its 32 products, converted
// to f32 and accumulated as fma(sum, block scale, acc) block after block, then × the row's scale.
// A block sum is an integer, so every way of forming it gives the same bits: AVX2's
// maddubs + madd + a horizontal add here, vpdpbusd at kAvx512 (cpu/matmul_i8_avx512.cpp), tile
// products at kAmx (cpu/matmul_i8_amx.cpp).
#include "cpu/matmul_quant.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/avx2_lane_walk.h"
#include "cpu/matmul.h"
#include "cpu/matmul_i8_amx.h"
#include "cpu/matmul_i8_avx2_lanes.h"
#include "cpu/matmul_i8_avx512.h"
#include "cpu/matmul_q4.h"
#include "cpu/matmul_q4_avx2_lanes.h"
#include "cpu/matmul_q4_avx512.h"
#include "cpu/q8_activations.h"
#include "cpu/quant_rows.h"
#include "cpu/reduce_avx2.h"
#include "cpu/shared_activations.h"
#include "cpu/tiling.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// ---- portable ----

// The exact Σ x·w of one block's `count` elements: |Σ| ≤ 32 · 127 · 128 < 2^24, so the int32 and
// its float are exact, and a −128 weight byte (outside the converter's range, but a file may hold
// it) is multiplied like any other.
inline int32_t BlockSumPortable(const int8_t* x, const int8_t* w, int64_t count) {
  int32_t sum = 0;
  for (int64_t k = 0; k < count; ++k) sum += int32_t{x[k]} * int32_t{w[k]};
  return sum;
}

float DotI8Portable(const int8_t* xq, const float* x_scales, int64_t blocks, const QuantRows& w,
                    int64_t r) {
  const int8_t* q = w.i8_row(r);
  float acc = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * kQ8BlockElements;
    const int64_t count = std::min<int64_t>(kQ8BlockElements, w.cols - begin);
    const int32_t sum = BlockSumPortable(xq + begin, q + begin, count);
    acc = std::fma(static_cast<float>(sum), x_scales[b], acc);
  }
  return acc * w.i8_scale(r);
}

void MatMulI8Portable(const Q8Activations& xq, int64_t num_tokens, const Weight& w,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                      int64_t row_end) {
  const QuantRows rows(w);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float b = bias ? WeightValue(bias, r) : 0.0f;
    for (int64_t t = 0; t < num_tokens; ++t) {
      out[t * out_stride + r] =
          DotI8Portable(xq.token_values(t), xq.token_scales(t), xq.blocks, rows, r) + b;
    }
  }
}

// ---- AVX2 ----

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// One block of kRows weight rows × kTokens tokens; product i = r · kTokens + t lands in lane i % 8
// of acc[i / 8]. The sign moves from w to x (|w| unsigned, x · sign(w) signed): x is in
// [−127, 127], so x · sign(w) never overflows, |w| ≤ 128 and a pair is at most 2 · 128 · 127 <
// 2^15 — maddubs never saturates, and every product is exact, −128 weights included.
template <int kRows, int kTokens>
inline __attribute__((always_inline)) void I8Block(const __m256i (&wv)[kRows],
                                                   const Q8Activations& xq, int64_t token,
                                                   int64_t b,
                                                   __m256 (&acc)[(kRows * kTokens + 7) / 8]) {
  constexpr int kProducts = kRows * kTokens, kGroups = (kProducts + 7) / 8;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sums[kGroups * 8];
  float scales[kTokens];
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t) {
    const __m256i xv = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(xq.token_values(token + t) + b * kQ8BlockElements));
    scales[t] = xq.token_scales(token + t)[b];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const __m256i pairs =
          _mm256_maddubs_epi16(_mm256_abs_epi8(wv[r]), _mm256_sign_epi8(xv, wv[r]));
      sums[r * kTokens + t] = _mm256_madd_epi16(pairs, ones);
    }
  }
#pragma GCC unroll 8
  for (int i = kProducts; i < kGroups * 8; ++i) sums[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int g = 0; g < kGroups; ++g) {
    alignas(32) float lane_scales[8];
#pragma GCC unroll 8
    for (int lane = 0; lane < 8; ++lane)
      lane_scales[lane] = 8 * g + lane < kProducts ? scales[(8 * g + lane) % kTokens] : 0.0f;
    const __m256i block_sums = SumEach(reinterpret_cast<const __m256i(&)[8]>(sums[8 * g]));
    acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_sums), _mm256_load_ps(lane_scales), acc[g]);
  }
}

// The loops carry unroll pragmas: at -O2 GCC otherwise keeps `acc` and the weight blocks in
// memory, which made this tile several times slower.
template <int kRows, int kTokens>
inline void I8Tile(const Q8Activations& xq, int64_t token, const QuantRows& w, int64_t row,
                   int64_t row_step, float results[kRows][kTokens]) {
  constexpr int kGroups = (kRows * kTokens + 7) / 8;
  __m256 acc[kGroups];
#pragma GCC unroll 4
  for (int g = 0; g < kGroups; ++g) acc[g] = _mm256_setzero_ps();
  const int64_t whole = w.cols / kQ8BlockElements;
  for (int64_t b = 0; b < whole; ++b) {
    __m256i wv[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      wv[r] = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(w.row(row + r * row_step) + b * kQ8BlockElements));
    }
    I8Block<kRows, kTokens>(wv, xq, token, b, acc);
  }
  if (whole < xq.blocks) {  // a partial last block: rows are not padded, so copy what is there
    const int64_t count = w.cols - whole * kQ8BlockElements;
    __m256i wv[kRows];
    for (int r = 0; r < kRows; ++r) {
      alignas(32) uint8_t padded[kQ8BlockElements] = {};
      std::memcpy(padded, w.row(row + r * row_step) + whole * kQ8BlockElements,
                  static_cast<size_t>(count));
      wv[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(padded));
    }
    I8Block<kRows, kTokens>(wv, xq, token, whole, acc);
  }
  alignas(32) float lanes[kGroups * 8];
  for (int g = 0; g < kGroups; ++g) _mm256_store_ps(lanes + 8 * g, acc[g]);
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t)
      results[r][t] = lanes[r * kTokens + t] * w.i8_scale(row + r * row_step);
}

void MatMulI8Avx2(const Q8Activations& xq, int64_t num_tokens, const Weight& w, const Weight& bias,
                  float* out, int64_t out_stride, int64_t row_begin, int64_t row_end) {
  // A few tokens past whole lane halves (9, 17, 25 …) go through the one-token tiles below.
  const int64_t tail = avx2_lanes::OneTokenTail(num_tokens, kI8Avx2LaneTailMaxTokens);
  int64_t first_token = 0;
  if (num_tokens >= kI8Avx2LaneMinTokens) {
    first_token = num_tokens - tail;
    MatMulI8Avx2Lanes(xq, first_token, w, bias, out, out_stride, row_begin, row_end);
    if (tail == 0) return;
  }
  const QuantRows rows(w);
  auto tile = [&]<int kRows, int kTokens>(int64_t r, int64_t t, int64_t row_step) {
    float results[kRows][kTokens];
    I8Tile<kRows, kTokens>(xq, first_token + t, rows, r, row_step, results);
    StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, first_token + t, row_step);
  };
  // Each token through the one-token tiles (8 rows): a 2-7 token call in 2 × 4 tiles had run at
  // a third to two thirds of one token's rate (one Zen 4 core, 2048 × 2048 in L3, 2 tokens 26 vs
  // 71 GOP/s; 5632 × 2048 from DRAM 20 vs 52), so 2 sequences decoded slower than one (1.1B:
  // 17 vs 25 tok/s). Leftover rows go in 2 × 4 tiles, whose eight block sums reduce together.
  ForEachTile<2, 4, 8>(num_tokens - first_token, row_begin, row_end,
                       xq.blocks * (kQ8BlockElements + 4), tile,
                       OneTokenTileMaxTokens(DType::kI8, CpuIsa::kAvx2));
}

#pragma GCC pop_options

}  // namespace

int64_t OneTokenTileMaxTokens(DType dtype, CpuIsa isa) {
  if (isa != CpuIsa::kAvx2) return 1;
  if (dtype == DType::kI8) return kI8Avx2LaneMinTokens - 1;
  if (dtype == DType::kQ4) return kQ4Avx2LaneMinTokens - 1;
  return 1;
}

int OneTokenTileStreams(DType dtype, CpuIsa isa) {
  if (isa >= CpuIsa::kAvx512 && dtype == DType::kI8) return kI8Avx512DecodeRows;
  if (isa >= CpuIsa::kAvx512 && dtype == DType::kQ4) return kQ4Avx512DecodeRows;
  return 8;  // the float, AVX2 and portable kernels' tiles
}

void MatMulRowsQuantized(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                         const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                         int64_t row_end, CpuIsa isa, uint64_t x_version,
                         const SharedActivations* shared) {
  if (w.dtype == DType::kQ4) {
    MatMulQ4(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end, isa, x_version,
             shared);
    return;
  }
  // Once per call (or per input, x_version; or for all threads, shared): the kernels that hand
  // tokens or rows on to a narrower one pass these along.
  const Q8Activations xq = shared && shared->Serves(x, x_stride, num_tokens, w, isa)
                               ? shared->q8
                               : QuantizeActivationsQ8(x, x_stride, num_tokens, w.cols,
                                                       isa != CpuIsa::kPortable, x_version);
  if (isa == CpuIsa::kPortable) {
    MatMulI8Portable(xq, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else if (isa == CpuIsa::kAmx) {
    MatMulI8Amx(xq, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else if (isa == CpuIsa::kAvx512) {
    MatMulI8Avx512(xq, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else {
    MatMulI8Avx2(xq, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  }
}

}  // namespace zinf::cpu
