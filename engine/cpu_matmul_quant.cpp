// int8 / int4 dot-product kernels: an AVX2/FMA version and a portable one with the same
// arithmetic. int8: Σ x·q over 8 lanes, lanes reduced in a fixed order, tail added, then × the
// row's scale. int4: each 8-element run is dequantized as fma(q, scale, min) — exactly the value
// DequantizeRow gives — and multiplied into the 8 lanes; the tail likewise.
#include "engine/cpu_matmul_quant.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "engine/cpu_matmul.h"
#include "engine/cpu_tiling.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// The lane reduction of the float kernels: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
inline float ReduceLanes(const float lanes[8]) {
  const float s04 = lanes[0] + lanes[4], s26 = lanes[2] + lanes[6];
  const float s15 = lanes[1] + lanes[5], s37 = lanes[3] + lanes[7];
  return (s04 + s26) + (s15 + s37);
}

// One weight matrix in a quantized layout, with the pointers each row needs.
struct QuantRows {
  const uint8_t* values;
  const std::byte* scales;
  int64_t row_bytes;
  int64_t groups;
  int64_t cols;
  int group_size;

  explicit QuantRows(const Weight& w) {
    const QuantLayout layout = LayoutOf(w.dtype, w.rows, w.cols, w.group_size);
    values = static_cast<const uint8_t*>(w.data);
    scales = static_cast<const std::byte*>(w.data) + layout.scales_offset();
    row_bytes = layout.row_bytes();
    groups = layout.groups();
    cols = w.cols;
    group_size = w.group_size;
  }
  const uint8_t* row(int64_t r) const { return values + r * row_bytes; }
  float i8_scale(int64_t r) const {
    float scale;
    std::memcpy(&scale, scales + r * 4, 4);
    return scale;
  }
  const uint16_t* q4_params(int64_t r) const {
    return reinterpret_cast<const uint16_t*>(scales) + r * groups * 2;
  }
};

// Byte offset and nibble half of the 8-element run starting at element k (k % 8 == 0).
inline int64_t Q4RunByte(int64_t k) { return k / kQ4BlockElements * 16 + k % 16; }
inline bool Q4RunIsHigh(int64_t k) { return k % kQ4BlockElements >= 16; }

// ---- portable ----

float DotI8Portable(const float* x, const QuantRows& w, int64_t r) {
  const auto* q = reinterpret_cast<const int8_t*>(w.row(r));
  const int64_t body = w.cols / 8 * 8;
  float lanes[8] = {};
  for (int64_t k = 0; k < body; k += 8)
    for (int lane = 0; lane < 8; ++lane)
      lanes[lane] = std::fma(x[k + lane], static_cast<float>(q[k + lane]), lanes[lane]);
  float sum = ReduceLanes(lanes);
  for (int64_t k = body; k < w.cols; ++k) sum = std::fma(x[k], static_cast<float>(q[k]), sum);
  return sum * w.i8_scale(r);
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
      const float weight = std::fma(static_cast<float>(Q4Nibble(nibbles, k + lane)), scale, minimum);
      lanes[lane] = std::fma(x[k + lane], weight, lanes[lane]);
    }
  }
  float sum = ReduceLanes(lanes);
  for (int64_t k = body; k < w.cols; ++k) {
    const int64_t g = k / w.group_size;
    const float weight = std::fma(static_cast<float>(Q4Nibble(nibbles, k)),
                                  F16ToF32(params[2 * g]), F16ToF32(params[2 * g + 1]));
    sum = std::fma(x[k], weight, sum);
  }
  return sum;
}

void MatMulPortable(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                    const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                    int64_t row_end) {
  const QuantRows rows(w);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float b = bias ? WeightValue(bias, r) : 0.0f;
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float dot = w.dtype == DType::kI8 ? DotI8Portable(x + t * x_stride, rows, r)
                                              : DotQ4Portable(x + t * x_stride, rows, r);
      out[t * out_stride + r] = dot + b;
    }
  }
}

// ---- AVX2 ----

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

inline __m256 LoadI8Run(const uint8_t* p) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
}

// 8 nibbles from 8 bytes at p: the high or the low halves, as floats.
template <bool kHigh>
inline __m256 LoadQ4Half(const uint8_t* p) {
  const __m256i wide = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_cvtepi32_ps(kHigh ? _mm256_srli_epi32(wide, 4)
                                  : _mm256_and_si256(wide, _mm256_set1_epi32(15)));
}

inline __m256 LoadQ4Run(const uint8_t* row, int64_t k) {
  return Q4RunIsHigh(k) ? LoadQ4Half<true>(row + Q4RunByte(k)) : LoadQ4Half<false>(row + Q4RunByte(k));
}

inline float FinishLanes(__m256 acc) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return ReduceLanes(lanes);
}

// kRows weight rows × kTokens tokens; each weight run is loaded and dequantized once per tile.
template <DType kDType, int kRows, int kTokens>
inline void QuantTile(const float* x, int64_t x_stride, const QuantRows& w, int64_t row,
                      float results[kRows][kTokens]) {
  __m256 acc[kRows][kTokens];
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t body = w.cols / 8 * 8;
  if constexpr (kDType == DType::kI8) {
    for (int64_t k = 0; k < body; k += 8) {
      __m256 wv[kRows];
      for (int r = 0; r < kRows; ++r) wv[r] = LoadI8Run(w.row(row + r) + k);
      for (int t = 0; t < kTokens; ++t) {
        const __m256 xv = _mm256_loadu_ps(x + t * x_stride + k);
        for (int r = 0; r < kRows; ++r) acc[r][t] = _mm256_fmadd_ps(xv, wv[r], acc[r][t]);
      }
    }
  } else {
    for (int64_t group_begin = 0; group_begin < body; group_begin += w.group_size) {
      const int64_t g = group_begin / w.group_size;
      const int64_t group_end = std::min(body, group_begin + w.group_size);
      __m256 scale[kRows], minimum[kRows];
      for (int r = 0; r < kRows; ++r) {
        const uint16_t* params = w.q4_params(row + r) + 2 * g;
        scale[r] = _mm256_set1_ps(_cvtsh_ss(params[0]));
        minimum[r] = _mm256_set1_ps(_cvtsh_ss(params[1]));
      }
      auto accumulate = [&](const __m256 (&wv)[kRows], int64_t k) {
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
          wv[r] = _mm256_fmadd_ps(LoadQ4Half<decltype(high)::value>(w.row(row + r) + Q4RunByte(run_k)),
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
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) {
      const float* xt = x + t * x_stride;
      float sum = FinishLanes(acc[r][t]);
      if constexpr (kDType == DType::kI8) {
        const auto* q = reinterpret_cast<const int8_t*>(w.row(row + r));
        for (int64_t k = body; k < w.cols; ++k) sum = std::fma(xt[k], static_cast<float>(q[k]), sum);
        results[r][t] = sum * w.i8_scale(row + r);
      } else {
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
}

template <DType kDType>
void MatMulAvx2(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                int64_t row_end) {
  const QuantRows rows(w);
  auto tile = [&]<int kRows, int kTokens>(int64_t r, int64_t t) {
    float results[kRows][kTokens];
    QuantTile<kDType, kRows, kTokens>(x + t * x_stride, x_stride, rows, r, results);
    for (int i = 0; i < kRows; ++i) {
      const float b = bias ? WeightValue(bias, r + i) : 0.0f;
      for (int j = 0; j < kTokens; ++j) out[(t + j) * out_stride + r + i] = results[i][j] + b;
    }
  };
  // Registers (16 ymm): int8 3 rows × 4 tokens = 12 accumulators + 3 dequantized runs + 1
  // activation; int4 also holds a scale and a minimum per row, so 2 × 4 = 8 + 2 + 4 + 1. One
  // token: 4 independent rows.
  if constexpr (kDType == DType::kI8) {
    ForEachTile<3, 4, 4>(num_tokens, row_begin, row_end, w.cols * 4, tile);
  } else {
    ForEachTile<2, 4, 4>(num_tokens, row_begin, row_end, w.cols * 4, tile);
  }
}

#pragma GCC pop_options

}  // namespace

void MatMulRowsQuantized(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                         const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                         int64_t row_end, bool use_avx2) {
  if (!use_avx2) {
    MatMulPortable(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else if (w.dtype == DType::kI8) {
    MatMulAvx2<DType::kI8>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  } else {
    MatMulAvx2<DType::kQ4>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
  }
}

}  // namespace zinf::cpu
