// int8 / int4 dot-product kernels: an AVX2/FMA version and a portable one with the same
// arithmetic. int8: the activations are quantized in blocks of 32 (cpu_q8_activations.h); per
// block, 8 exact int32 sums of 4 products each (the lanes of _mm256_maddubs_epi16 then
// _mm256_madd_epi16), converted to f32 and accumulated as fma(sum, block scale, lane); the 8 lanes
// reduced in a fixed order, then × the row's scale. int4: each 8-element run is dequantized as
// fma(q, scale, min) — exactly the value DequantizeRow gives — and multiplied into f32 activations
// in 8 lanes; the tail likewise. At the kAvx512 level int8 runs cpu_matmul_i8_avx512.cpp (the same
// sums from vpdpbusd, the same chains); int4 stays on the AVX2 kernel there.
#include "cpu/matmul_quant.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/dot.h"
#include "cpu/matmul.h"
#include "cpu/matmul_i8_avx512.h"
#include "cpu/matmul_q4_batched.h"
#include "cpu/q8_activations.h"
#include "cpu/quant_rows.h"
#include "cpu/tiling.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// Byte offset and nibble half of the 8-element run starting at element k (k % 8 == 0).
inline int64_t Q4RunByte(int64_t k) { return k / kQ4BlockElements * 16 + k % 16; }
inline bool Q4RunIsHigh(int64_t k) { return k % kQ4BlockElements >= 16; }

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

float DotQ4Portable(const float* x, const QuantRows& w, int64_t r) {
  const uint8_t* nibbles = w.row(r);
  const uint16_t* params = w.q4_params(r);
  const int64_t body = w.cols / 8 * 8;
  float lanes[8] = {};
  for (int64_t k = 0; k < body; k += 8) {
    const int64_t g = k / w.group_size;
    const float scale = F16ToF32(params[2 * g]), minimum = F16ToF32(params[2 * g + 1]);
    for (int lane = 0; lane < 8; ++lane) {
      const float weight =
          std::fma(static_cast<float>(Q4Nibble(nibbles, k + lane)), scale, minimum);
      lanes[lane] = std::fma(x[k + lane], weight, lanes[lane]);
    }
  }
  float sum = ReduceLanes(lanes);
  for (int64_t k = body; k < w.cols; ++k) {
    const int64_t g = k / w.group_size;
    const float weight = std::fma(static_cast<float>(Q4Nibble(nibbles, k)), F16ToF32(params[2 * g]),
                                  F16ToF32(params[2 * g + 1]));
    sum = std::fma(x[k], weight, sum);
  }
  return sum;
}

void MatMulPortable(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                    const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                    int64_t row_end) {
  const QuantRows rows(w);
  Q8Activations xq;
  if (w.dtype == DType::kI8) xq = QuantizeActivationsQ8(x, x_stride, num_tokens, w.cols, false);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float b = bias ? WeightValue(bias, r) : 0.0f;
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float dot =
          w.dtype == DType::kI8
              ? DotI8Portable(xq.token_values(t), xq.token_scales(t), xq.blocks, rows, r)
              : DotQ4Portable(x + t * x_stride, rows, r);
      out[t * out_stride + r] = dot + b;
    }
  }
}

// ---- AVX2 ----

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// 8 nibbles from 8 bytes at p: the high or the low halves, as floats.
template <bool kHigh>
inline __m256 LoadQ4Half(const uint8_t* p) {
  const __m256i wide = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_cvtepi32_ps(kHigh ? _mm256_srli_epi32(wide, 4)
                                  : _mm256_and_si256(wide, _mm256_set1_epi32(15)));
}

inline __m256 LoadQ4Run(const uint8_t* row, int64_t k) {
  return Q4RunIsHigh(k) ? LoadQ4Half<true>(row + Q4RunByte(k))
                        : LoadQ4Half<false>(row + Q4RunByte(k));
}

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

// int4: kRows weight rows × kTokens tokens; each weight run is loaded and dequantized once per
// tile.
template <int kRows, int kTokens>
inline void Q4Tile(const float* x, int64_t x_stride, const QuantRows& w, int64_t row,
                   float results[kRows][kTokens]) {
  __m256 acc[kRows][kTokens];
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t body = w.cols / 8 * 8;
  for (int64_t group_begin = 0; group_begin < body; group_begin += w.group_size) {
    const int64_t g = group_begin / w.group_size;
    const int64_t group_end = std::min(body, group_begin + w.group_size);
    __m256 scale[kRows], minimum[kRows];
    for (int r = 0; r < kRows; ++r) {
      const uint16_t* params = w.q4_params(row + r) + 2 * g;
      scale[r] = _mm256_set1_ps(_cvtsh_ss(params[0]));
      minimum[r] = _mm256_set1_ps(_cvtsh_ss(params[1]));
    }
    auto accumulate = [&](const __m256(&wv)[kRows], int64_t k) {
      for (int t = 0; t < kTokens; ++t) {
        const __m256 xv = _mm256_loadu_ps(x + t * x_stride + k);
        for (int r = 0; r < kRows; ++r) acc[r][t] = _mm256_fmadd_ps(xv, wv[r], acc[r][t]);
      }
    };
    int64_t k = group_begin;
    // Whole 32-element blocks as four runs whose nibble half is known: no per-run branch.
    auto block_run = [&](int64_t run_k, auto high) {
      __m256 wv[kRows];
      for (int r = 0; r < kRows; ++r) {
        wv[r] =
            _mm256_fmadd_ps(LoadQ4Half<decltype(high)::value>(w.row(row + r) + Q4RunByte(run_k)),
                            scale[r], minimum[r]);
      }
      accumulate(wv, run_k);
    };
    for (; k + kQ4BlockElements <= group_end; k += kQ4BlockElements) {
      block_run(k, std::false_type{});
      block_run(k + 8, std::false_type{});
      block_run(k + 16, std::true_type{});
      block_run(k + 24, std::true_type{});
    }
    for (; k < group_end; k += 8) {  // the runs of a partial last block
      __m256 wv[kRows];
      for (int r = 0; r < kRows; ++r)
        wv[r] = _mm256_fmadd_ps(LoadQ4Run(w.row(row + r), k), scale[r], minimum[r]);
      accumulate(wv, k);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) {
      const float* xt = x + t * x_stride;
      float sum = FinishLanes(acc[r][t]);
      const uint16_t* params = w.q4_params(row + r);
      for (int64_t k = body; k < w.cols; ++k) {
        const int64_t g = k / w.group_size;
        const float weight = std::fma(static_cast<float>(Q4Nibble(w.row(row + r), k)),
                                      F16ToF32(params[2 * g]), F16ToF32(params[2 * g + 1]));
        sum = std::fma(xt[k], weight, sum);
      }
      results[r][t] = sum;
    }
  }
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

void MatMulQ4Avx2(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                  const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                  int64_t row_end) {
  const QuantRows rows(w);
  auto tile = [&]<int kRows, int kTokens>(int64_t r, int64_t t) {
    float results[kRows][kTokens];
    Q4Tile<kRows, kTokens>(x + t * x_stride, x_stride, rows, r, results);
    StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, t);
  };
  // Registers (16 ymm): a scale and a minimum per row, so 2 × 4 = 8 accumulators + 2 + 4 + 1
  // activation. One token: 4 independent rows.
  ForEachTile<2, 4, 4>(num_tokens, row_begin, row_end, w.cols * 4, tile);
}

#pragma GCC pop_options

}  // namespace

void MatMulRowsQuantized(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                         const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                         int64_t row_end, CpuIsa isa) {
  if (isa == CpuIsa::kPortable) {
    MatMulPortable(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else if (w.dtype == DType::kI8 && isa == CpuIsa::kAvx512) {
    MatMulI8Avx512(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else if (w.dtype == DType::kI8) {
    MatMulI8Avx2(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else if (num_tokens >= kQ4BatchedMinTokens) {
    MatMulQ4Batched(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end, isa);
  } else {
    MatMulQ4Avx2(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  }
}

}  // namespace zinf::cpu
