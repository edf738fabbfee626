// The float-weight CPU matmul kernels: every instruction-set level this CPU has gives the portable
// kernel's bits, for f32/f16/bf16 weights, any token count (odd ones leave a lone token in the
// AVX-512 kernel's pairs), rows not a multiple of the tile, rows split between threads and row
// lengths with a scalar tail; and the portable kernel agrees with a float64 product.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/isa.h"
#include "cpu/matmul.h"
#include "engine/dtype.h"
#include "tests/support/random_values.h"

namespace zinf {

using testing::RandomValues;

namespace {

// `values` stored as `dtype` (f32, f16 or bf16), with the Weight that reads them.
struct FloatMatrix {
  std::vector<float> f32;
  std::vector<uint16_t> halves;
  Weight weight;

  FloatMatrix(const std::vector<float>& values, DType dtype, int64_t rows, int64_t cols) {
    if (dtype == DType::kF32) {
      f32 = values;
      weight = {f32.data(), dtype, rows, cols, 0};
      return;
    }
    for (float v : values) halves.push_back(dtype == DType::kF16 ? F32ToF16(v) : F32ToBf16(v));
    weight = {halves.data(), dtype, rows, cols, 0};
  }
};

}  // namespace

TEST_CASE("float matmul: every kernel level equals the portable one bit for bit") {
  const cpu::CpuIsa best = cpu::BestCpuIsa();
  if (best == cpu::CpuIsa::kPortable) WARN("no AVX2 on this CPU: only the portable kernel is checked");
  if (best < cpu::CpuIsa::kAvx512) WARN("no AVX-512 on this CPU: its kernel is not checked here");
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t cols : {1, 7, 8, 13, 64, 100, 773, 2053, 5632}) {  // the last two in spans (f32)
      const int64_t rows = 13;  // split 5 + 8: tiles of 6 rows with and without leftovers
      FloatMatrix w(RandomValues(rows * cols, 7 + cols), dtype, rows, cols);
      const std::vector<float> bias_values = RandomValues(rows, 8);
      const Weight bias{bias_values.data(), DType::kF32, 1, rows, 0};
      for (int64_t tokens : {1, 2, 3, 12, 13, 27}) {
        const int64_t x_stride = cols + 3;  // rows of x are not packed
        const std::vector<float> x = RandomValues(tokens * x_stride, 9 + tokens);
        std::vector<float> portable(tokens * rows);
        cpu::MatMulRows(x.data(), x_stride, tokens, w.weight, bias, portable.data(), rows, 0, rows,
                        cpu::CpuIsa::kPortable);
        for (cpu::CpuIsa isa : {cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512}) {
          if (isa > best) continue;
          std::vector<float> fast(tokens * rows, -1.0f);
          cpu::MatMulRows(x.data(), x_stride, tokens, w.weight, bias, fast.data(), rows, 0, 5, isa);
          cpu::MatMulRows(x.data(), x_stride, tokens, w.weight, bias, fast.data(), rows, 5, rows,
                          isa);
          INFO(DTypeName(dtype) << " cols " << cols << " tokens " << tokens << " level "
                                << cpu::CpuIsaName(isa));
          CHECK(std::memcmp(portable.data(), fast.data(), portable.size() * sizeof(float)) == 0);
        }
        if (dtype != DType::kF32) continue;
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            double exact = bias_values[r];
            for (int64_t k = 0; k < cols; ++k) exact += double{x[t * x_stride + k]} * w.f32[r * cols + k];
            CHECK(portable[t * rows + r] == Approx(exact).epsilon(1e-4).margin(1e-4));
          }
        }
      }
    }
  }
}

TEST_CASE("cpu::CpuBackend::MatMuls equals one MatMul per projection, also after x changes in place") {
  cpu::CpuBackend backend(2);
  const int64_t tokens = 13, cols = 64;
  const int64_t rows[] = {24, 16, 16};
  Tensor x = backend.AllocateActivation(tokens, cols);
  std::vector<FloatMatrix> weights;
  std::vector<Tensor> shared, single;
  for (int i = 0; i < 3; ++i) {
    weights.emplace_back(RandomValues(rows[i] * cols, 60 + i), DType::kF32, rows[i], cols);
    shared.push_back(backend.AllocateActivation(tokens, rows[i]));
    single.push_back(backend.AllocateActivation(tokens, rows[i]));
  }
  const std::vector<Backend::Projection> projections = {
      {weights[0].weight, {}, shared[0]}, {weights[1].weight, {}, shared[1]}, {weights[2].weight, {}, shared[2]}};
  for (uint32_t round = 0; round < 2; ++round) {  // the second round reuses x's memory
    const std::vector<float> values = RandomValues(tokens * cols, 70 + round);
    std::memcpy(x.data, values.data(), values.size() * sizeof(float));
    backend.MatMuls(x, projections);
    for (int i = 0; i < 3; ++i) {
      backend.MatMul(x, weights[i].weight, {}, single[i]);
      INFO("round " << round << " projection " << i);
      CHECK(std::memcmp(shared[i].data, single[i].data, tokens * rows[i] * sizeof(float)) == 0);
    }
  }
}

}  // namespace zinf
