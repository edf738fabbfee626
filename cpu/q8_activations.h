// f32 activation rows quantized for the int8 weight kernels (Q8_0-style): blocks of 32 int8 values
// with one f32 scale each, symmetric and rounded to nearest-even like QuantizeRowI8, the last
// block of a row padded with zeros. A token's blocks depend only on that token's row.
#pragma once

#include <cstdint>
#include <vector>

namespace zinf::cpu {

inline constexpr int kQ8BlockElements = 32;
// The widest block QuantizeRowQ8 takes (the int4 kernels quantize in blocks of the weights' group).
inline constexpr int kQ8MaxBlockElements = 128;

// Blocks per row of `cols` values (the last one may be partial, padded with zeros).
inline int64_t Q8Blocks(int64_t cols) { return (cols + kQ8BlockElements - 1) / kQ8BlockElements; }

// Quantizes one row in blocks of `block_elements` (32, 64 or 128; the int8 kernels use 32):
// values[blocks × block_elements], scales[blocks]. Per block, with m the
// largest |x|: scale = m / 127 and q = clamp(nearbyint(x · (127 / m)), −127, 127). A block with
// m below 1e-30 (127 / m would overflow) is zeros with scale 0; one holding a NaN or an infinity
// is zeros with a NaN scale, so every product it enters is NaN. The AVX2 version writes the same
// bytes as the portable one.
void QuantizeRowQ8(const float* x, int64_t cols, int8_t* values, float* scales, bool use_avx2,
                   int block_elements = kQ8BlockElements);

// Quantized tokens [0, num_tokens): token t's blocks at values + t × blocks × 32, its scales at
// scales + t × blocks.
struct Q8Activations {
  const int8_t* values = nullptr;
  const float* scales = nullptr;
  int64_t blocks = 0;

  const int8_t* token_values(int64_t t) const { return values + t * blocks * kQ8BlockElements; }
  const float* token_scales(int64_t t) const { return scales + t * blocks; }
  // The same tokens from token t on.
  Q8Activations from(int64_t t) const { return {token_values(t), token_scales(t), blocks}; }
};

// Where QuantizeTokensQ8 writes: Q8Activations' layout, in buffers the caller owns.
struct Q8ActivationStore {
  int8_t* values = nullptr;
  float* scales = nullptr;
  int64_t blocks = 0;

  Q8Activations view() const { return {values, scales, blocks}; }
};

// Buffers a Q8ActivationStore lives in, grown only.
struct Q8Buffers {
  std::vector<int8_t> values;
  std::vector<float> scales;
};
Q8ActivationStore GrowQ8Buffers(Q8Buffers& buffers, int64_t num_tokens, int64_t cols);

// QuantizeRowQ8 for tokens [token_begin, token_end) of x, each into its place in `store`: threads
// that share one store each quantize their own tokens.
void QuantizeTokensQ8(const float* x, int64_t x_stride, int64_t token_begin, int64_t token_end,
                      int64_t cols, bool use_avx2, const Q8ActivationStore& store);

// What a thread's activation buffer last holds. A call whose key equals it, with a version other
// than 0 (cpu::MatMulRows' x_version: x unchanged), returns the buffer as it is: q, k and v (gate
// and up) quantize their common input once per thread instead of once per projection.
struct QuantizedInputKey {
  const float* x = nullptr;
  int64_t x_stride = 0, num_tokens = 0, cols = 0;
  int block_elements = 0;
  bool use_avx2 = false;
  uint64_t x_version = 0;

  bool operator==(const QuantizedInputKey&) const = default;
  bool Reusable(const QuantizedInputKey& last) const { return x_version != 0 && *this == last; }
};

// Quantizes every token row of x ([num_tokens] rows of `cols`, `x_stride` apart) into a buffer
// owned by the calling thread: grown when a call needs more, never shrunk, so the step loop does
// not allocate once it has seen its largest batch. Valid until the thread's next call (which
// reuses it for the same x_version: QuantizedInputKey).
Q8Activations QuantizeActivationsQ8(const float* x, int64_t x_stride, int64_t num_tokens,
                                    int64_t cols, bool use_avx2, uint64_t x_version = 0);

}  // namespace zinf::cpu
