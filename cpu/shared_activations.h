// Activations prepared once for every thread of a product, each thread taking its share of the
// tokens, where otherwise each thread prepares every token for itself: at many tokens that repeats
// work in proportion to the thread count (110M int4 prefill of 512 tokens, Zen 4, 2 threads: ~9%
// of each thread's time was its own copy). Quantized for int8 and int4 weights; for float weights
// at the AVX-512 levels, laid out as the float kernel's token pairs.
#pragma once

#include <cstdint>

#include "cpu/isa.h"
#include "cpu/matmul_avx512.h"
#include "cpu/q4_activations.h"
#include "cpu/q8_activations.h"
#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace zinf::cpu {

struct SharedActivations {
  // kI8: q8 holds the tokens, kQ4: q4; kF32: token_pairs, for f32, f16 and bf16 weights alike,
  // or nothing prepared where that is null.
  DType dtype = DType::kF32;
  bool use_avx2 = false;
  // The input they were prepared from.
  const float* x = nullptr;
  int64_t x_stride = 0, num_tokens = 0, cols = 0;
  Q8Activations q8;
  Q4Activations q4;
  const TokenPairLine* token_pairs = nullptr;  // cpu/matmul_avx512.h's layout

  // Whether these were prepared from this input, as wide as w's rows.
  bool From(const float* input, int64_t input_stride, int64_t tokens, const Weight& w) const {
    return input == x && input_stride == x_stride && tokens == num_tokens && w.cols == cols;
  }

  // Whether these are the activations w's kernel at `isa` would otherwise quantize from this x.
  bool Serves(const float* input, int64_t input_stride, int64_t tokens, const Weight& w,
              CpuIsa isa) const {
    if (w.dtype != dtype || use_avx2 != (isa != CpuIsa::kPortable)) return false;
    if (!From(input, input_stride, tokens, w)) return false;
    return dtype == DType::kI8 || (dtype == DType::kQ4 && q4.group_size == w.group_size);
  }

  // The token pairs w's float kernel at `isa` would otherwise pack from this x, or null.
  const TokenPairLine* TokenPairsFor(const float* input, int64_t input_stride, int64_t tokens,
                                     const Weight& w, CpuIsa isa) const {
    if (token_pairs == nullptr || IsQuantized(w.dtype) || isa < CpuIsa::kAvx512) return nullptr;
    return From(input, input_stride, tokens, w) ? token_pairs : nullptr;
  }
};

// x ([num_tokens] rows of `cols`, `x_stride` apart) prepared for w's kernels at `isa`, the tokens
// split between the pool's threads, into buffers owned by the calling thread (grown only, valid
// until its next call; the calling thread keeps these besides each thread's own). Nothing prepared
// for fewer tokens than repay a pool hand-off, nor for float weights below AVX-512.
SharedActivations PrepareSharedActivations(ThreadPool& pool, const float* x, int64_t x_stride,
                                           int64_t num_tokens, int64_t cols, const Weight& w,
                                           CpuIsa isa);

}  // namespace zinf::cpu
