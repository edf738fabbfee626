// int8 dot-product kernels, an AVX2/FMA version and a portable one with the same arithmetic, and
// the dispatch to the int4 kernels (cpu/matmul_q4.h). int8: the activations are quantized in
// blocks of 32 (cpu/q8_activations.h); per block, 8 exact int32 sums of 4 products each (the lanes
// of _mm256_maddubs_epi16 then _mm256_madd_epi16), converted to f32 and accumulated as fma(sum,
// block scale, lane); the 8 lanes reduced in a fixed order, then × the row's scale. At the kAvx512
// level int8 runs cpu/matmul_i8_avx512.cpp (the same sums from vpdpbusd, the same chains).
#include "cpu/matmul_quant.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/dot.h"
#include "cpu/matmul.h"
#include "cpu/matmul_i8_avx512.h"
#include "cpu/matmul_q4.h"
#include "cpu/q8_activations.h"
#include "cpu/quant_rows.h"
#include "cpu/tiling.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// ---- portable ----

// One product as the AVX2 kernel forms it (the sign trick): |x| (unsigned) times w with x's
// sign, w negated in int8 as _mm256_sign_epi8 does. That is exactly x·w for every w the
// converter writes ([−127, 127]); a −128 byte (a file from elsewhere) gives −128·|x| on every
// path alike.
inline int32_t SignTrickProduct(int8_t x, int8_t w) {
  const int32_t magnitude = x < 0 ? -x : x;
  const int8_t signed_w = x > 0 ? w : (x < 0 ? static_cast<int8_t>(-w) : int8_t{0});
  return magnitude * signed_w;
}

// Σ over the blocks of one token and one int8 weight row, in the AVX2 kernel's lanes: lane j of
// a block is the exact int32 sum of the products of elements 4j..4j+3 (of the first `count`; the
// rest is the activations' zero padding).
float DotI8Portable(const int8_t* xq, const float* x_scales, int64_t blocks, const QuantRows& w,
                    int64_t r) {
  const auto* q = reinterpret_cast<const int8_t*>(w.row(r));
  float lanes[8] = {};
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * kQ8BlockElements;
    const int64_t count = std::min<int64_t>(kQ8BlockElements, w.cols - begin);
    for (int lane = 0; lane < 8; ++lane) {
      int32_t sum = 0;
      for (int64_t k = 4 * lane; k < std::min<int64_t>(4 * lane + 4, count); ++k)
        sum += SignTrickProduct(xq[begin + k], q[begin + k]);
      lanes[lane] = std::fma(static_cast<float>(sum), x_scales[b], lanes[lane]);
    }
  }
  return ReduceLanes(lanes) * w.i8_scale(r);
}

void MatMulI8Portable(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                      int64_t row_end) {
  const QuantRows rows(w);
  const Q8Activations xq = QuantizeActivationsQ8(x, x_stride, num_tokens, w.cols, false);
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

inline float FinishLanes(__m256 acc) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return ReduceLanes(lanes);
}

// int8: kRows weight rows × kTokens tokens of quantized activations; each weight block is loaded
// once per tile, each activation block once per token. The sign trick (SignTrickProduct):
// _mm256_maddubs_epi16(|x|, w · sign(x)), |x| taken once per token; with x in [−127, 127] a pair
// never saturates the int16 (2 · 127 · 128 < 2^15), so each int32 lane is exact.
template <int kRows, int kTokens>
inline __attribute__((always_inline)) void I8Block(const __m256i (&wv)[kRows],
                                                   const Q8Activations& xq, int64_t token,
                                                   int64_t b, __m256 (&acc)[kRows][kTokens]) {
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t) {
    const __m256i xv = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(xq.token_values(token + t) + b * kQ8BlockElements));
    const __m256i magnitude = _mm256_sign_epi8(xv, xv);
    const __m256 scale = _mm256_set1_ps(xq.token_scales(token + t)[b]);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(wv[r], xv));
      const __m256 sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
      acc[r][t] = _mm256_fmadd_ps(sums, scale, acc[r][t]);
    }
  }
}

// The loops carry unroll pragmas: at -O2 GCC otherwise keeps `acc` and the weight blocks in
// memory, which made this tile several times slower.
template <int kRows, int kTokens>
inline void I8Tile(const Q8Activations& xq, int64_t token, const QuantRows& w, int64_t row,
                   float results[kRows][kTokens]) {
  __m256 acc[kRows][kTokens];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  const int64_t whole = w.cols / kQ8BlockElements;
  for (int64_t b = 0; b < whole; ++b) {
    __m256i wv[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      wv[r] = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(w.row(row + r) + b * kQ8BlockElements));
    }
    I8Block<kRows, kTokens>(wv, xq, token, b, acc);
  }
  if (whole < xq.blocks) {  // a partial last block: rows are not padded, so copy what is there
    const int64_t count = w.cols - whole * kQ8BlockElements;
    __m256i wv[kRows];
    for (int r = 0; r < kRows; ++r) {
      alignas(32) uint8_t padded[kQ8BlockElements] = {};
      std::memcpy(padded, w.row(row + r) + whole * kQ8BlockElements, static_cast<size_t>(count));
      wv[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(padded));
    }
    I8Block<kRows, kTokens>(wv, xq, token, whole, acc);
  }
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) results[r][t] = FinishLanes(acc[r][t]) * w.i8_scale(row + r);
}

void MatMulI8Avx2(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                  const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                  int64_t row_end) {
  const QuantRows rows(w);
  const Q8Activations xq = QuantizeActivationsQ8(x, x_stride, num_tokens, w.cols, true);
  auto tile = [&]<int kRows, int kTokens>(int64_t r, int64_t t) {
    float results[kRows][kTokens];
    I8Tile<kRows, kTokens>(xq, t, rows, r, results);
    StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, t);
  };
  // 3 rows × 4 tokens: 12 accumulators, 3 weight blocks, a token's block, its magnitude and scale
  // and the constant ones take more than 16 ymm registers, yet measured a few % faster than 2 × 4
  // (which fits) and as fast as 4 × 3: each weight block serves 4 tokens. One token: 4 rows.
  ForEachTile<3, 4, 4>(num_tokens, row_begin, row_end, xq.blocks * (kQ8BlockElements + 4), tile);
}

#pragma GCC pop_options

}  // namespace

void MatMulRowsQuantized(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                         const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                         int64_t row_end, CpuIsa isa) {
  if (w.dtype == DType::kQ4) {
    MatMulQ4(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end, isa);
  } else if (isa == CpuIsa::kPortable) {
    MatMulI8Portable(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else if (isa == CpuIsa::kAvx512) {
    MatMulI8Avx512(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else {
    MatMulI8Avx2(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  }
}

}  // namespace zinf::cpu
