// f32 activation rows prepared for the int4 weight kernels: quantized to int8 in blocks of the
// weights' group size (cpu/q8_activations.h's rounding, one f32 scale per token and group), plus,
// per group, the factor its minimum multiplies: scale × Σ of the group's int8 values.
#pragma once

#include <cstdint>
#include <vector>

namespace zinf::cpu {

// Tokens [0, tokens) of one call. A token's values are its row padded with zeros to
// groups × group_size; scales and minimum factors are stored group-major ([groups][tokens]) so a
// tile reads consecutive tokens' factors of one group with one load.
struct Q4Activations {
  const int8_t* values = nullptr;
  const float* scales = nullptr;
  const float* min_factors = nullptr;
  int64_t tokens = 0;
  int64_t groups = 0;
  int group_size = 0;

  const int8_t* token_values(int64_t t) const { return values + t * groups * group_size; }
  float scale(int64_t t, int64_t g) const { return scales[g * tokens + t]; }
  float min_factor(int64_t t, int64_t g) const { return min_factors[g * tokens + t]; }
  const float* group_min_factors(int64_t g) const { return min_factors + g * tokens; }
};

// Where PrepareQ4Tokens writes: Q4Activations' layout for `tokens` tokens, in buffers the caller
// owns.
struct Q4ActivationStore {
  int8_t* values = nullptr;
  float* scales = nullptr;
  float* min_factors = nullptr;
  int64_t tokens = 0;
  int64_t groups = 0;
  int group_size = 0;

  Q4Activations view() const { return {values, scales, min_factors, tokens, groups, group_size}; }
};

// Buffers a Q4ActivationStore lives in, grown only.
struct Q4Buffers {
  std::vector<int8_t> values;
  std::vector<float> scales;
  std::vector<float> min_factors;
};
Q4ActivationStore GrowQ4Buffers(Q4Buffers& buffers, int64_t num_tokens, int64_t cols,
                                int group_size);

// Tokens [token_begin, token_end) of x quantized into their places in `store`: threads that share
// one store each prepare their own tokens (the bits do not depend on who does).
void PrepareQ4Tokens(const float* x, int64_t x_stride, int64_t token_begin, int64_t token_end,
                     int64_t cols, bool use_avx2, const Q4ActivationStore& store);

// Quantizes every token row of x ([num_tokens] rows of `cols`, `x_stride` apart) into buffers
// owned by the calling thread, grown only (the step loop stops allocating once it has seen its
// largest batch). min_factor = scale × float(Σ values), one f32 product. Valid until the thread's
// next call (which reuses them for the same x_version: cpu/q8_activations.h's QuantizedInputKey).
Q4Activations PrepareQ4Activations(const float* x, int64_t x_stride, int64_t num_tokens,
                                   int64_t cols, int group_size, bool use_avx2,
                                   uint64_t x_version = 0);

// Tokens [token_begin, token_end)'s scales and minimum factors copied `lanes` tokens at a time:
// for token group k (tokens token_begin + k · lanes, …) and group g, its `lanes` scales, then its
// `lanes` minimum factors (zeros past token_end), at (k · groups + g) · 2 · lanes. A tile that
// walks the groups for a few tokens then reads one stream, where group-major each group's factors
// lie tokens × 4 bytes further on: a page apart at 512 tokens (1.1B int4 prefill of 512 tokens,
// Zen 4: ~15% slower per token than of 128 in the AVX-512 token lanes, ~5% in the AVX2 tiles).
// Into a buffer owned by the calling thread, grown only; valid until the thread's next call.
const float* PackFactorsByTokenGroup(const Q4Activations& xa, int64_t token_begin,
                                     int64_t token_end, int lanes);

}  // namespace zinf::cpu
