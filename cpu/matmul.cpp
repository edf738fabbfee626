// Dot-product kernels: an AVX2/FMA version and a portable version with the same arithmetic.
// Each dot product keeps one 8-lane accumulator over the input dimension in steps of 8, reduces the
// lanes in a fixed order, then adds the tail and the bias: the result of an element depends only on
// its own row and token, never on tiling, so batch size and thread count cannot change outputs.
#include "cpu/matmul.h"

#include "cpu/dot.h"
#include "cpu/matmul_avx512.h"
#include "cpu/matmul_float_panels_avx2.h"
#include "cpu/matmul_quant.h"
#include "cpu/shared_activations.h"
#include "cpu/tile_prefetch.h"
#include "cpu/tiling.h"
#include "cpu/weights_avx2.h"
#include "engine/quantized.h"

#include <immintrin.h>

#include <atomic>
#include <cmath>
#include <cstring>

namespace zinf::cpu {

float WeightValue(const Weight& w, int64_t idx) {
  switch (w.dtype) {
    case DType::kF32: return static_cast<const float*>(w.data)[idx];
    case DType::kF16: return F16ToF32(static_cast<const uint16_t*>(w.data)[idx]);
    case DType::kBF16: return Bf16ToF32(static_cast<const uint16_t*>(w.data)[idx]);
    case DType::kI8:
    case DType::kQ4: return QuantizedValue(w, idx);
  }
  return 0;
}

namespace {

inline float FinishDot(const float lanes[8], const float* x, const Weight& w, int64_t row,
                       int64_t tail_begin) {
  return AddDotTail(ReduceLanes(lanes), x, w, row, tail_begin);
}

void MatMulRowsPortable(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                        const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                        int64_t row_end) {
  const int64_t body = w.cols / 8 * 8;
  float weights[8];
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float bias_value = bias ? WeightValue(bias, r) : 0.0f;
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* xt = x + t * x_stride;
      float lanes[8] = {};
      for (int64_t k = 0; k < body; k += 8) {
        for (int lane = 0; lane < 8; ++lane) weights[lane] = WeightValue(w, r * w.cols + k + lane);
        for (int lane = 0; lane < 8; ++lane) {
          lanes[lane] = std::fma(xt[k + lane], weights[lane], lanes[lane]);
        }
      }
      out[t * out_stride + r] = FinishDot(lanes, xt, w, r, body) + bias_value;
    }
  }
}

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// A tile of kRows weight rows × kTokens tokens: each weight vector loaded once per tile.
template <DType kDType, int kRows, int kTokens>
inline void DotTile(const float* x, int64_t x_stride, const Weight& w, int64_t row,
                    int64_t row_step, int64_t body, bool prefetch_next_tile,
                    float results[kRows][kTokens]) {
  // Unrolled by pragmas: at -O2 GCC otherwise keeps `acc` in memory (a third of the speed).
  __m256 acc[kRows][kTokens];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_ps();
  // A lone token reads each weight once: where it measured faster (cpu/tile_prefetch.h), what the
  // next tile reads is prefetched as this tile's rows are consumed: the bytes right after this
  // tile's, or, for rows a stride apart, each row's line kStreamPrefetchBytes on.
  constexpr int64_t kElementBytes = kDType == DType::kF32 ? 4 : 2;
  const int64_t row_bytes = w.cols * kElementBytes;
  const char* first_row = static_cast<const char*>(w.data) + row * row_bytes;
  const char* rows[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) rows[r] = first_row + r * row_step * row_bytes;
  auto step = [&](int64_t k) __attribute__((always_inline)) {
    __m256 wv[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) wv[r] = LoadWeights8<kDType>(rows[r], k);
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * x_stride + k);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[r][t] = _mm256_fmadd_ps(xv, wv[r], acc[r][t]);
    }
  };
  int64_t k = 0;
  if (kTokens == 1 && prefetch_next_tile && row_step != 1) {
    // Each row's request at a constant offset from the address its loads use (one instruction
    // each, no address arithmetic); two steps, a line of f32, per request.
    constexpr int64_t kLineElements = 64 / kElementBytes;
    for (; k + kLineElements <= body; k += kLineElements) {
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r)
        _mm_prefetch(rows[r] + k * kElementBytes + kStreamPrefetchBytes, _MM_HINT_T0);
#pragma GCC unroll 4
      for (int64_t i = 0; i < kLineElements; i += 8) step(k + i);
    }
  } else if (kTokens == 1 && prefetch_next_tile) {
    constexpr int64_t kStepBytes = kRows * 8 * kElementBytes;
    const char* next_tile = first_row + kRows * row_bytes;
    for (; k < body; k += 8) {
#pragma GCC unroll 8
      for (int64_t line = 0; line < kStepBytes; line += 64)
        _mm_prefetch(next_tile + k / 8 * kStepBytes + line, _MM_HINT_T0);
      step(k);
    }
  }
  for (; k < body; k += 8) step(k);
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, acc[r][t]);
      results[r][t] = FinishDot(lanes, x + t * x_stride, w, row + r * row_step, body);
    }
  }
}

template <DType kDType>
void MatMulRowsAvx2(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                    const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                    int64_t row_end) {
  // Several tokens take the panel walk. One token: 8 independent rows, 8 streams for the
  // hardware prefetchers (1.1B-shape f32 decode on an Emerald Rapids guest: 7.2 tok/s with 8,
  // 6.5 with 4, 5.9 with 12); rows left over in tiles of 3 and 1.
  if (num_tokens >= kFloatPanelMinTokens) {
    MatMulFloatAvx2Panels(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
    return;
  }
  const int64_t body = w.cols / 8 * 8;
  const bool prefetch_next_tile = PrefetchNextTile(kDType, num_tokens);
  ForEachTile<3, 1, 8>(num_tokens, row_begin, row_end, w.cols * 4,
                       [&]<int kRows, int kTokens>(int64_t r, int64_t t, int64_t row_step) {
                         float results[kRows][kTokens];
                         DotTile<kDType, kRows, kTokens>(x + t * x_stride, x_stride, w, r, row_step,
                                                         body, prefetch_next_tile, results);
                         StoreTile<kRows, kTokens>(results, bias, out, out_stride, r, t, row_step);
                       });
}

#pragma GCC pop_options

}  // namespace

void MatMulRows(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                int64_t row_end, CpuIsa isa, uint64_t x_version, const SharedActivations* shared) {
  if (IsQuantized(w.dtype)) {
    MatMulRowsQuantized(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end, isa,
                        x_version, shared);
    return;
  }
  if (isa >= CpuIsa::kAvx512 && num_tokens >= 2) {
    const TokenPairLine* pairs =
        shared != nullptr ? shared->TokenPairsFor(x, x_stride, num_tokens, w, isa) : nullptr;
    MatMulRowsAvx512(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end,
                     {x_version, pairs});
    return;
  }
  if (isa == CpuIsa::kPortable) {
    MatMulRowsPortable(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin, row_end);
    return;
  }
  switch (w.dtype) {
    case DType::kF32:
      MatMulRowsAvx2<DType::kF32>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin,
                                  row_end);
      return;
    case DType::kF16:
      MatMulRowsAvx2<DType::kF16>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin,
                                  row_end);
      return;
    case DType::kBF16:
      MatMulRowsAvx2<DType::kBF16>(x, x_stride, num_tokens, w, bias, out, out_stride, row_begin,
                                   row_end);
      return;
    case DType::kI8:
    case DType::kQ4: return;  // handled above
  }
}

uint64_t NewActivationVersion() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

}  // namespace zinf::cpu
