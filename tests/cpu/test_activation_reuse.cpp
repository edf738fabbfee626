// Quantized activations reused: by one thread across the products of one input (x_version), and
// by every thread of a product (cpu/shared_activations.h). Each product must equal the one whose
// thread quantized x for itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/matmul.h"
#include "cpu/shared_activations.h"
#include "cpu/thread_pool.h"
#include "tests/cpu/quantized_matrix.h"
#include "tests/support/random_values.h"

namespace zinf {

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
          CHECK(shared.Serves(q.weight, isa) == (tokens >= 32));
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

}  // namespace zinf
