// Q8 activation blocks: a portable quantizer and an AVX2 one that writes the same bytes (the max
// is exact in any order, x · inverse is one f32 product, rounding is nearest-even in both, and the
// clamp takes the same operand on a tie), plus the per-thread buffer the int8 kernels read.
#include "cpu/q8_activations.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/grown_buffer.h"

namespace zinf::cpu {

namespace {

// Below this largest |x|, 127 / m overflows f32 (or nearly): such a block is quantized as zeros
// with a zero scale (its products would be below 1e-28 anyway).
constexpr float kTinyBlockMax = 1e-30f;

// A block whose values need no quantizing: zeros with `scale` (0 for a tiny block, NaN for a
// non-finite one).
void WriteFlatBlock(int8_t* values, int count, float* scale, float value) {
  std::memset(values, 0, static_cast<size_t>(count));
  *scale = value;
}

// A block of `count` values (a multiple of 32, at most kQ8MaxBlockElements).
void QuantizeBlockPortable(const float* x, int count, int8_t* values, float* scale) {
  float max_abs = 0;
  bool has_nan = false;
  for (int i = 0; i < count; ++i) {
    const float a = std::fabs(x[i]);
    has_nan |= std::isnan(a);
    max_abs = max_abs < a ? a : max_abs;  // as _mm256_max_ps(a, max_abs): a NaN keeps max_abs
  }
  if (has_nan || std::isinf(max_abs)) {
    return WriteFlatBlock(values, count, scale, std::numeric_limits<float>::quiet_NaN());
  }
  if (max_abs < kTinyBlockMax) return WriteFlatBlock(values, count, scale, 0.0f);
  *scale = max_abs / 127.0f;
  const float inverse = 127.0f / max_abs;
  for (int i = 0; i < count; ++i) {
    float q = std::nearbyint(x[i] * inverse);
    q = q > -127.0f ? q : -127.0f;  // as _mm256_max_ps(q, -127)
    q = q < 127.0f ? q : 127.0f;    // as _mm256_min_ps(q, 127)
    values[i] = static_cast<int8_t>(q);
  }
}

__attribute__((target("avx2,fma"))) void QuantizeBlockAvx2(const float* x, int count,
                                                           int8_t* values, float* scale) {
  __m256 max_abs = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  for (int i = 0; i < count; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    max_abs = _mm256_max_ps(_mm256_andnot_ps(sign_bit, v), max_abs);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(max_abs), _mm256_extractf128_ps(max_abs, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float block_max = _mm_cvtss_f32(m4);
  if (_mm256_movemask_ps(nan) != 0 || std::isinf(block_max)) {
    return WriteFlatBlock(values, count, scale, std::numeric_limits<float>::quiet_NaN());
  }
  if (block_max < kTinyBlockMax) return WriteFlatBlock(values, count, scale, 0.0f);
  *scale = block_max / 127.0f;
  const __m256 inverse = _mm256_set1_ps(127.0f / block_max);
  const __m256 low = _mm256_set1_ps(-127.0f), high = _mm256_set1_ps(127.0f);
  for (int chunk = 0; chunk < count; chunk += 32) {
    __m256i ints[4];
    for (int i = 0; i < 4; ++i) {
      __m256 q = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + chunk + 8 * i), inverse),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm256_min_ps(_mm256_max_ps(q, low), high);
      ints[i] = _mm256_cvtps_epi32(q);
    }
    // The packs interleave 128-bit halves; the permutation puts the 32 bytes back in order.
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(ints[0], ints[1]),
                                              _mm256_packs_epi32(ints[2], ints[3]));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(values + chunk),
                        _mm256_permutevar8x32_epi32(packed, order));
  }
}

}  // namespace

void QuantizeRowQ8(const float* x, int64_t cols, int8_t* values, float* scales, bool use_avx2,
                   int block_elements) {
  const int64_t blocks = (cols + block_elements - 1) / block_elements;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* block = x + b * block_elements;
    float padded[kQ8MaxBlockElements];
    const int64_t count = std::min<int64_t>(block_elements, cols - b * block_elements);
    if (count < block_elements) {  // the partial last block, padded with zeros
      std::fill(std::copy(block, block + count, padded), padded + block_elements, 0.0f);
      block = padded;
    }
    if (use_avx2) {
      QuantizeBlockAvx2(block, block_elements, values + b * block_elements, scales + b);
    } else {
      QuantizeBlockPortable(block, block_elements, values + b * block_elements, scales + b);
    }
  }
}

Q8ActivationStore GrowQ8Buffers(Q8Buffers& buffers, int64_t num_tokens, int64_t cols) {
  const int64_t blocks = Q8Blocks(cols);
  return {Grown(buffers.values, num_tokens * blocks * kQ8BlockElements),
          Grown(buffers.scales, num_tokens * blocks), blocks};
}

void QuantizeTokensQ8(const float* x, int64_t x_stride, int64_t token_begin, int64_t token_end,
                      int64_t cols, bool use_avx2, const Q8ActivationStore& store) {
  for (int64_t t = token_begin; t < token_end; ++t) {
    QuantizeRowQ8(x + t * x_stride, cols, store.values + t * store.blocks * kQ8BlockElements,
                  store.scales + t * store.blocks, use_avx2);
  }
}

Q8Activations QuantizeActivationsQ8(const float* x, int64_t x_stride, int64_t num_tokens,
                                    int64_t cols, bool use_avx2, uint64_t x_version) {
  thread_local Q8Buffers buffers;
  thread_local QuantizedInputKey last_key;
  thread_local Q8Activations quantized;
  const QuantizedInputKey key{x, x_stride, num_tokens, cols, kQ8BlockElements, use_avx2, x_version};
  if (key.Reusable(last_key)) return quantized;
  last_key = {};  // while the buffers are being rewritten
  const Q8ActivationStore store = GrowQ8Buffers(buffers, num_tokens, cols);
  QuantizeTokensQ8(x, x_stride, 0, num_tokens, cols, use_avx2, store);
  quantized = store.view();
  last_key = key;
  return quantized;
}

}  // namespace zinf::cpu
