// Activations quantized once for every thread of a product, each thread taking its share of the
// tokens, where otherwise each thread quantizes every token for itself: at many tokens that repeats
// work in proportion to the thread count (110M int4 prefill of 512 tokens, Zen 4, 2 threads: ~9%
// of each thread's time was its own copy).
#pragma once

#include <cstdint>

#include "cpu/isa.h"
#include "cpu/q4_activations.h"
#include "cpu/q8_activations.h"
#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace zinf::cpu {

struct SharedActivations {
  DType dtype = DType::kF32;  // kI8: q8 holds the tokens, kQ4: q4; kF32: nothing prepared
  bool use_avx2 = false;
  // The input they were quantized from.
  const float* x = nullptr;
  int64_t x_stride = 0, num_tokens = 0, cols = 0;
  Q8Activations q8;
  Q4Activations q4;

  // Whether these are the activations w's kernel at `isa` would otherwise quantize from this x.
  bool Serves(const float* input, int64_t input_stride, int64_t tokens, const Weight& w,
              CpuIsa isa) const {
    if (w.dtype != dtype || use_avx2 != (isa != CpuIsa::kPortable)) return false;
    if (input != x || input_stride != x_stride || tokens != num_tokens || w.cols != cols) {
      return false;
    }
    return dtype == DType::kI8 || (dtype == DType::kQ4 && q4.group_size == w.group_size);
  }
};

// x ([num_tokens] rows of `cols`, `x_stride` apart) quantized for w's kernels at `isa`, the tokens
// split between the pool's threads, into buffers owned by the calling thread (grown only, valid
// until its next call; the calling thread keeps these besides each thread's own). Nothing prepared
// (dtype kF32) where w is not quantized, or for fewer tokens than repay a pool hand-off.
SharedActivations PrepareSharedActivations(ThreadPool& pool, const float* x, int64_t x_stride,
                                           int64_t num_tokens, int64_t cols, const Weight& w,
                                           CpuIsa isa);

}  // namespace zinf::cpu
