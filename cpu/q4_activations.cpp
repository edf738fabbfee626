// The int4 kernels' activations: int8 groups from QuantizeRowQ8, then each group's scale and
// minimum factor moved to the group-major tables the tiles read.
#include "cpu/q4_activations.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "cpu/q8_activations.h"

namespace zinf::cpu {

namespace {

struct Buffers {
  std::vector<int8_t> values;
  std::vector<float> row_scales;  // one token's, [groups]
  std::vector<float> scales;
  std::vector<float> min_factors;
  QuantizedInputKey key;
  Q4Activations prepared;
};

template <typename T>
T* Grown(std::vector<T>& buffer, int64_t count) {
  if (buffer.size() < static_cast<size_t>(count)) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

}  // namespace

Q4Activations PrepareQ4Activations(const float* x, int64_t x_stride, int64_t num_tokens,
                                   int64_t cols, int group_size, bool use_avx2,
                                   uint64_t x_version) {
  thread_local Buffers buffers;
  const QuantizedInputKey key{x, x_stride, num_tokens, cols, group_size, use_avx2, x_version};
  if (key.Reusable(buffers.key)) return buffers.prepared;
  buffers.key = {};  // while the buffers are being rewritten
  const int64_t groups = (cols + group_size - 1) / group_size;
  int8_t* values = Grown(buffers.values, num_tokens * groups * group_size);
  float* row_scales = Grown(buffers.row_scales, groups);
  float* scales = Grown(buffers.scales, num_tokens * groups);
  float* min_factors = Grown(buffers.min_factors, num_tokens * groups);
  for (int64_t t = 0; t < num_tokens; ++t) {
    int8_t* row = values + t * groups * group_size;
    QuantizeRowQ8(x + t * x_stride, cols, row, row_scales, use_avx2, group_size);
    for (int64_t g = 0; g < groups; ++g) {
      const int8_t* group = row + g * group_size;
      const int32_t sum = std::accumulate(group, group + group_size, int32_t{0});
      scales[g * num_tokens + t] = row_scales[g];
      min_factors[g * num_tokens + t] = row_scales[g] * static_cast<float>(sum);
    }
  }
  buffers.prepared = {values, scales, min_factors, num_tokens, groups, group_size};
  buffers.key = key;
  return buffers.prepared;
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
