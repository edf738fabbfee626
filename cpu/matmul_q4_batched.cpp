// MatMulQ4Batched: dequantize a block of rows (AVX2, F16C), multiply it as f32.
#include "cpu/matmul_q4_batched.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/matmul.h"
#include "cpu/quant_rows.h"
#include "engine/dtype.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// Rows dequantized at a time: up to ~512 KiB of f32, so the block stays in L2 while every token
// passes, in whole 6-row tiles of the AVX-512 float kernel (and 3-row ones of the AVX2 kernel):
// a block cut mid-tile would run its last rows through the slow edge tiles.
constexpr int64_t kBlockBytes = 512 << 10;
constexpr int64_t kBlockRowMultiple = 6;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Row r's values as fma(q, scale, min) in f32, the rounding DequantizeRow and the int4 kernels use.
void DequantizeRowQ4(const QuantRows& w, int64_t r, float* out) {
  const uint8_t* nibbles = w.row(r);
  const uint16_t* params = w.q4_params(r);
  const int64_t body = w.cols / kQ4BlockElements * kQ4BlockElements;
  for (int64_t k = 0; k < body; k += kQ4BlockElements) {
    const int64_t g = k / w.group_size;
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(params[2 * g]));
    const __m256 minimum = _mm256_set1_ps(_cvtsh_ss(params[2 * g + 1]));
    // A block's 16 bytes: element j in the low nibble of byte j, element j + 16 in the high one.
    const uint8_t* block = nibbles + k / kQ4BlockElements * 16;
    for (int half = 0; half < 2; ++half) {
      const __m256i wide =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 8 * half)));
      const __m256 low = _mm256_cvtepi32_ps(_mm256_and_si256(wide, _mm256_set1_epi32(15)));
      const __m256 high = _mm256_cvtepi32_ps(_mm256_srli_epi32(wide, 4));
      _mm256_storeu_ps(out + k + 8 * half, _mm256_fmadd_ps(low, scale, minimum));
      _mm256_storeu_ps(out + k + 16 + 8 * half, _mm256_fmadd_ps(high, scale, minimum));
    }
  }
  for (int64_t k = body; k < w.cols; ++k) {
    const int64_t g = k / w.group_size;
    out[k] = std::fma(static_cast<float>(Q4Nibble(nibbles, k)), F16ToF32(params[2 * g]),
                      F16ToF32(params[2 * g + 1]));
  }
}

#pragma GCC pop_options

}  // namespace

void MatMulQ4Batched(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                     const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                     int64_t row_end, CpuIsa isa) {
  const QuantRows rows(w);
  const int64_t block_rows = std::max<int64_t>(
      kBlockRowMultiple, kBlockBytes / (w.cols * 4) / kBlockRowMultiple * kBlockRowMultiple);
  // Grown only: the step loop does not allocate once the widest matrix has been seen.
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(block_rows * w.cols))
    scratch.resize(block_rows * w.cols);
  // Every block multiplies the same x: the float kernel packs it once for all of them.
  const uint64_t x_version = NewActivationVersion();
  for (int64_t r0 = row_begin; r0 < row_end; r0 += block_rows) {
    const int64_t n = std::min(block_rows, row_end - r0);
    for (int64_t i = 0; i < n; ++i) DequantizeRowQ4(rows, r0 + i, scratch.data() + i * w.cols);
    const Weight block{scratch.data(), DType::kF32, n, w.cols};
    Weight block_bias = bias;
    if (bias) {
      block_bias.data = static_cast<const std::byte*>(bias.data) + r0 * DTypeSize(bias.dtype);
      block_bias.cols = n;
    }
    MatMulRows(x, x_stride, num_tokens, block, block_bias, out + r0, out_stride, 0, n, isa,
               x_version);
  }
}

}  // namespace zinf::cpu
