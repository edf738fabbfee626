// The int4 kernels' activations: int8 groups from QuantizeRowQ8, then each group's scale and
// minimum factor moved to the group-major tables the tiles read.
#include "cpu/q4_activations.h"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "cpu/grown_buffer.h"
#include "cpu/q8_activations.h"

namespace zinf::cpu {

namespace {

// Σ of a group's int8 values (count a multiple of 32): maddubs of ones pairs them into int16
// (|sum| ≤ 254), madd into int32; exact, as std::accumulate.
__attribute__((target("avx2"))) int32_t SumBytesAvx2(const int8_t* values, int count) {
  const __m256i ones_u8 = _mm256_set1_epi8(1), ones_i16 = _mm256_set1_epi16(1);
  __m256i sums = _mm256_setzero_si256();
  for (int i = 0; i < count; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + i));
    sums = _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_maddubs_epi16(ones_u8, v), ones_i16));
  }
  const __m128i half =
      _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
  const __m128i quarter = _mm_add_epi32(half, _mm_unpackhi_epi64(half, half));
  return _mm_cvtsi128_si32(quarter) + _mm_extract_epi32(quarter, 1);
}

}  // namespace

void PrepareQ4Tokens(const float* x, int64_t x_stride, int64_t token_begin, int64_t token_end,
                     int64_t cols, bool use_avx2, const Q4ActivationStore& store) {
  thread_local std::vector<float> row_scales_buffer;  // one token's, [groups]
  const int64_t groups = store.groups;
  float* row_scales = Grown(row_scales_buffer, groups);
  for (int64_t t = token_begin; t < token_end; ++t) {
    int8_t* row = store.values + t * groups * store.group_size;
    QuantizeRowQ8(x + t * x_stride, cols, row, row_scales, use_avx2, store.group_size);
    for (int64_t g = 0; g < groups; ++g) {
      const int8_t* group = row + g * store.group_size;
      const int32_t sum = use_avx2 ? SumBytesAvx2(group, store.group_size)
                                   : std::accumulate(group, group + store.group_size, int32_t{0});
      store.scales[g * store.tokens + t] = row_scales[g];
      store.min_factors[g * store.tokens + t] = row_scales[g] * static_cast<float>(sum);
    }
  }
}

Q4ActivationStore GrowQ4Buffers(Q4Buffers& buffers, int64_t num_tokens, int64_t cols,
                                int group_size) {
  const int64_t groups = (cols + group_size - 1) / group_size;
  return {Grown(buffers.values, num_tokens * groups * group_size),
          Grown(buffers.scales, num_tokens * groups),
          Grown(buffers.min_factors, num_tokens * groups),
          num_tokens,
          groups,
          group_size};
}

Q4Activations PrepareQ4Activations(const float* x, int64_t x_stride, int64_t num_tokens,
                                   int64_t cols, int group_size, bool use_avx2,
                                   uint64_t x_version) {
  thread_local Q4Buffers buffers;
  thread_local QuantizedInputKey last_key;
  thread_local Q4Activations prepared;
  const QuantizedInputKey key{x, x_stride, num_tokens, cols, group_size, use_avx2, x_version};
  if (key.Reusable(last_key)) return prepared;
  last_key = {};  // while the buffers are being rewritten
  const Q4ActivationStore store = GrowQ4Buffers(buffers, num_tokens, cols, group_size);
  PrepareQ4Tokens(x, x_stride, 0, num_tokens, cols, use_avx2, store);
  prepared = store.view();
  last_key = key;
  return prepared;
}

const float* PackFactorsByTokenGroup(const Q4Activations& xa, int64_t token_begin,
                                     int64_t token_end, int lanes) {
  thread_local std::vector<float> packed;
  const int64_t token_groups = (token_end - token_begin + lanes - 1) / lanes;
  float* out = Grown(packed, token_groups * xa.groups * 2 * lanes);
  for (int64_t k = 0; k < token_groups; ++k) {
    const int64_t first = token_begin + k * lanes;
    const int64_t count = std::min<int64_t>(lanes, token_end - first);
    for (int64_t g = 0; g < xa.groups; ++g) {
      float* dst = out + (k * xa.groups + g) * 2 * lanes;
      std::fill(dst, dst + 2 * lanes, 0.0f);
      std::copy_n(xa.scales + g * xa.tokens + first, count, dst);
      std::copy_n(xa.min_factors + g * xa.tokens + first, count, dst + lanes);
    }
  }
  return out;
}

}  // namespace zinf::cpu
