// Activations reused: quantized by one thread across the products of one input (x_version), and
// quantized or packed as token pairs once for every thread of a product
// (cpu/shared_activations.h). Each product must equal the one whose thread prepared x itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/matmul.h"
#include "cpu/shared_activations.h"
#include "cpu/thread_pool.h"
#include "tests/cpu/float_matrix.h"
#include "tests/cpu/quantized_matrix.h"
#include "tests/support/random_values.h"

namespace zinf {

using testing::FloatMatrix;
using testing::QuantizedMatrix;
using testing::RandomValues;

TEST_CASE("quantized matmul: one x_version quantizes x once, a new one quantizes it again") {
  // q, k and v share one input and one version; the next layer's input may sit at the same
  // address with new values and a new version. Each product must equal its unversioned twin.
  const int64_t rows = 24, cols = 200, tokens = 19;
  for (DType dtype : {DType::kI8, DType::kQ4}) {
    for (int group_size : {32, 64}) {
      if (dtype == DType::kI8 && group_size != 32) continue;
      const QuantizedMatrix first(RandomValues(rows * cols, 61), dtype, rows, cols, group_size);
      const QuantizedMatrix second(RandomValues(rows * cols, 62), dtype, rows, cols, group_size);
      std::vector<float> x = RandomValues(tokens * cols, 63);
      for (int input = 0; input < 2; ++input) {
        if (input == 1) {  // new values at the same address
          const std::vector<float> next = RandomValues(tokens * cols, 64);
          std::copy(next.begin(), next.end(), x.begin());
        }
        std::vector<float> shared(tokens * rows), fresh(tokens * rows);
        const uint64_t version = cpu::NewActivationVersion();
        for (const QuantizedMatrix* q : {&first, &second}) {
          cpu::MatMulRows(x.data(), cols, tokens, q->weight, {}, shared.data(), rows, 0, rows,
                          cpu::ActiveCpuIsa(), version);
          cpu::MatMulRows(x.data(), cols, tokens, q->weight, {}, fresh.data(), rows, 0, rows,
                          cpu::ActiveCpuIsa(), 0);
          INFO(DTypeName(dtype) << " group " << group_size << " input " << input);
          CHECK(shared == fresh);
        }
      }
    }
  }
}

TEST_CASE("quantized matmul: activations quantized once for all threads give each thread's bits") {
  // PrepareSharedActivations splits the tokens between the pool's threads; every product that
  // reads them must equal the one whose thread quantized x itself, at every level this CPU runs.
  cpu::ThreadPool pool(3);
  const int64_t rows = 20, cols = 320;
  for (cpu::CpuIsa isa :
       {cpu::CpuIsa::kPortable, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512, cpu::CpuIsa::kAmx}) {
    if (cpu::BestCpuIsa() < isa) continue;
    for (DType dtype : {DType::kI8, DType::kQ4}) {
      for (int group_size : {32, 64, 128}) {
        if (dtype == DType::kI8 && group_size != 32) continue;
        const QuantizedMatrix q(RandomValues(rows * cols, 71), dtype, rows, cols, group_size);
        for (int64_t tokens : {int64_t{31}, int64_t{32}, int64_t{45}, int64_t{70}}) {
          const std::vector<float> x = RandomValues(tokens * cols, 72 + tokens);
          const cpu::SharedActivations shared =
              cpu::PrepareSharedActivations(pool, x.data(), cols, tokens, cols, q.weight, isa);
          INFO(cpu::CpuIsaName(isa)
               << " " << DTypeName(dtype) << " group " << group_size << " tokens " << tokens);
          // From 32 tokens up the pool shares the work (below, each thread quantizes for itself).
          CHECK(shared.Serves(x.data(), cols, tokens, q.weight, isa) == (tokens >= 32));
          // Nor for another input, another group size or dtype.
          CHECK_FALSE(shared.Serves(x.data() + cols, cols, tokens - 1, q.weight, isa));
          const QuantizedMatrix other(RandomValues(rows * cols, 73),
                                      dtype == DType::kI8 ? DType::kQ4 : DType::kI8, rows, cols,
                                      group_size == 32 ? 64 : 32);
          CHECK_FALSE(shared.Serves(x.data(), cols, tokens, other.weight, isa));
          std::vector<float> with_shared(tokens * rows), own(tokens * rows);
          cpu::MatMulRows(x.data(), cols, tokens, q.weight, {}, with_shared.data(), rows, 0, 7, isa,
                          0, &shared);
          cpu::MatMulRows(x.data(), cols, tokens, q.weight, {}, with_shared.data(), rows, 7, rows,
                          isa, 0, &shared);
          cpu::MatMulRows(x.data(), cols, tokens, q.weight, {}, own.data(), rows, 0, rows, isa, 0);
          CHECK(std::memcmp(with_shared.data(), own.data(), own.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("float matmul: token pairs packed once for all threads give each thread's bits") {
  // At the AVX-512 levels PrepareSharedActivations packs x's token pairs for f32, f16 and bf16
  // weights, the pairs split between the pool's threads; a product reading them must equal the
  // one whose thread packed x itself. Below AVX-512 nothing is packed.
  cpu::ThreadPool pool(3);
  const int64_t rows = 20;
  for (cpu::CpuIsa isa :
       {cpu::CpuIsa::kPortable, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512, cpu::CpuIsa::kAmx}) {
    if (cpu::BestCpuIsa() < isa) continue;
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      // 203 columns: 25 chunks and a tail the kernel reads from x; 5: all tail, nothing packed.
      for (int64_t cols : {int64_t{5}, int64_t{203}, int64_t{320}}) {
        const FloatMatrix w(RandomValues(rows * cols, 91 + cols), dtype, rows, cols);
        for (int64_t tokens : {int64_t{31}, int64_t{32}, int64_t{45}, int64_t{70}}) {
          const int64_t x_stride = cols + 3;
          const std::vector<float> x = RandomValues(tokens * x_stride, 92 + tokens);
          const cpu::SharedActivations shared =
              cpu::PrepareSharedActivations(pool, x.data(), x_stride, tokens, cols, w.weight, isa);
          INFO(cpu::CpuIsaName(isa)
               << " " << DTypeName(dtype) << " cols " << cols << " tokens " << tokens);
          const bool packed = isa >= cpu::CpuIsa::kAvx512 && tokens >= 32 && cols >= 8;
          CHECK((shared.TokenPairsFor(x.data(), x_stride, tokens, w.weight, isa) != nullptr) ==
                packed);
          // Each pair chunk one cache line (a load straddling two is slower).
          CHECK(reinterpret_cast<uintptr_t>(shared.token_pairs) % 64 == 0);
          // Not for another input, nor for quantized weights.
          CHECK(shared.TokenPairsFor(x.data() + x_stride, x_stride, tokens - 1, w.weight, isa) ==
                nullptr);
          const QuantizedMatrix int8(RandomValues(rows * cols, 93), DType::kI8, rows, cols, 32);
          CHECK(shared.TokenPairsFor(x.data(), x_stride, tokens, int8.weight, isa) == nullptr);
          CHECK_FALSE(shared.Serves(x.data(), x_stride, tokens, int8.weight, isa));
          std::vector<float> with_shared(tokens * rows), own(tokens * rows);
          cpu::MatMulRows(x.data(), x_stride, tokens, w.weight, {}, with_shared.data(), rows, 0, 7,
                          isa, 0, &shared);
          cpu::MatMulRows(x.data(), x_stride, tokens, w.weight, {}, with_shared.data(), rows, 7,
                          rows, isa, 0, &shared);
          cpu::MatMulRows(x.data(), x_stride, tokens, w.weight, {}, own.data(), rows, 0, rows, isa,
                          0);
          CHECK(std::memcmp(with_shared.data(), own.data(), own.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("quantized matmul: a backend's products of one input, quantized once, equal each alone") {
  // MatMuls with projections of mixed types and group sizes over one input: the first's
  // activations are shared (from 32 tokens up), the others quantize for themselves; every output
  // must equal a one-thread product of that weight alone.
  cpu::CpuBackend backend(3);
  const int64_t cols = 192;
  const int64_t rows[] = {24, 17, 40, 9};
  const QuantizedMatrix weights[] = {
      QuantizedMatrix(RandomValues(rows[0] * cols, 81), DType::kQ4, rows[0], cols, 64),
      QuantizedMatrix(RandomValues(rows[1] * cols, 82), DType::kQ4, rows[1], cols, 32),
      QuantizedMatrix(RandomValues(rows[2] * cols, 83), DType::kI8, rows[2], cols, 0),
      QuantizedMatrix(RandomValues(rows[3] * cols, 84), DType::kQ4, rows[3], cols, 128)};
  for (int64_t tokens : {int64_t{32}, int64_t{47}, int64_t{100}}) {
    for (int first = 0; first < 2; ++first) {  // an int4 or the int8 weight decides what is shared
      std::vector<float> x = RandomValues(tokens * cols, 85 + tokens);
      std::vector<std::vector<float>> outs;
      std::vector<Backend::Projection> projections;
      for (int i = 0; i < 4; ++i) outs.emplace_back(tokens * rows[i], -1.0f);
      for (int k = 0; k < 4; ++k) {
        const int i = (k + 2 * first) % 4;
        projections.push_back({weights[i].weight, {}, {outs[i].data(), tokens, rows[i]}});
      }
      backend.MatMuls({x.data(), tokens, cols}, projections);
      for (int i = 0; i < 4; ++i) {
        std::vector<float> alone(tokens * rows[i]);
        cpu::MatMulRows(x.data(), cols, tokens, weights[i].weight, {}, alone.data(), rows[i], 0,
                        rows[i]);
        INFO("tokens " << tokens << " weight " << i << " first " << first);
        CHECK(std::memcmp(alone.data(), outs[i].data(), alone.size() * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace zinf
