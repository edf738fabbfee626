// PrepareSharedActivations: the int8 or int4 quantization of x, a share of the tokens per thread.
#include "cpu/shared_activations.h"

namespace zinf::cpu {

namespace {

// Below this many tokens each thread quantizes its own copy. Zen 4, 2 threads, a 110M layer's
// products (768 / 2048 wide): sharing was level with the threads' own copies at 8 to 64 tokens
// (the extra hand-off against the halved work), 2-4% faster at 512. 32, not 64: the work saved
// grows with the thread count while the hand-off does not, so wider pools gain lower down.
constexpr int64_t kMinSharedTokens = 32;

// Tokens per task: a few rows of a wide input are already tens of microseconds.
constexpr int64_t kTokensPerTask = 4;

}  // namespace

SharedActivations PrepareSharedActivations(ThreadPool& pool, const float* x, int64_t x_stride,
                                           int64_t num_tokens, int64_t cols, const Weight& w,
                                           CpuIsa isa) {
  SharedActivations shared;
  if (!IsQuantized(w.dtype) || num_tokens < kMinSharedTokens || pool.num_threads() < 2) {
    return shared;
  }
  shared.use_avx2 = isa != CpuIsa::kPortable;
  if (w.dtype == DType::kI8) {
    // The calling thread's buffers, taken here: named inside the loop body, a worker would find
    // its own.
    thread_local Q8Buffers buffers;
    const Q8ActivationStore store = GrowQ8Buffers(buffers, num_tokens, cols);
    pool.ParallelFor(
        num_tokens,
        [&](int64_t begin, int64_t end) {
          QuantizeTokensQ8(x, x_stride, begin, end, cols, shared.use_avx2, store);
        },
        kTokensPerTask);
    shared.q8 = store.view();
  } else {
    thread_local Q4Buffers buffers;
    const Q4ActivationStore store = GrowQ4Buffers(buffers, num_tokens, cols, w.group_size);
    pool.ParallelFor(
        num_tokens,
        [&](int64_t begin, int64_t end) {
          PrepareQ4Tokens(x, x_stride, begin, end, cols, shared.use_avx2, store);
        },
        kTokensPerTask);
    shared.q4 = store.view();
  }
  shared.x = x;
  shared.x_stride = x_stride;
  shared.num_tokens = num_tokens;
  shared.cols = cols;
  shared.dtype = w.dtype;
  return shared;
}

}  // namespace zinf::cpu
