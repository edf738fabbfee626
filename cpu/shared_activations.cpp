// PrepareSharedActivations: the int8 or int4 quantization of x, or its float token pairs, a share
// of the tokens per thread.
#include "cpu/shared_activations.h"

#include <vector>

namespace zinf::cpu {

namespace {

// Below this many tokens each thread prepares its own copy. Zen 4, 2 threads, a 110M layer's
// products (768 / 2048 wide): sharing was level with the threads' own copies at 8 to 64 tokens
// (the extra hand-off against the halved work), 2-4% faster at 512. 32, not 64: the work saved
// grows with the thread count while the hand-off does not, so wider pools gain lower down. Float
// token pairs (a copy, cheaper than quantizing), Emerald Rapids, 2 threads, alternating: 32 to 128
// tokens level to 1.10x (768 x 768 1.06-1.10x at 128, 2048 x 2048 and 6144 x 2048 1.10x at 32),
// 512 level (each core then reads the other's half of the pairs from L3).
constexpr int64_t kMinSharedTokens = 32;

// Tokens per task: a few rows of a wide input are already tens of microseconds.
constexpr int64_t kTokensPerTask = 4;

}  // namespace

SharedActivations PrepareSharedActivations(ThreadPool& pool, const float* x, int64_t x_stride,
                                           int64_t num_tokens, int64_t cols, const Weight& w,
                                           CpuIsa isa) {
  SharedActivations shared;
  if (num_tokens < kMinSharedTokens || pool.num_threads() < 2) return shared;
  if (!IsQuantized(w.dtype)) {
    // A row shorter than 8 is all tail: the kernel reads x itself.
    if (isa < CpuIsa::kAvx512 || cols < 8) return shared;
    // The calling thread's, taken here as the buffers below are.
    thread_local std::vector<TokenPairLine> buffer;
    const auto size = static_cast<size_t>(TokenPairLines(num_tokens, cols));
    if (buffer.size() < size) buffer.resize(size);
    TokenPairLine* pairs = buffer.data();
    pool.ParallelFor((num_tokens + 1) / 2,
                     [&](int64_t begin, int64_t end) {
                       PackTokenPairsAvx512(x, x_stride, num_tokens, cols, begin, end, pairs);
                     },
                     kTokensPerTask / 2);
    shared.token_pairs = pairs;
    shared.x = x;
    shared.x_stride = x_stride;
    shared.num_tokens = num_tokens;
    shared.cols = cols;
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
