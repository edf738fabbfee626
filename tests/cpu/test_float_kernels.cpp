// The float-weight CPU matmul kernels: the portable one agrees with a float64 product, and the
// AVX2 / AVX-512 ones give its bits for f32/f16/bf16 weights, odd token counts (a lone token in the
// AVX-512 pairs), rows off the tile, rows split between threads and row lengths with a scalar tail.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/isa.h"
#include "cpu/matmul.h"
#include "cpu/matmul_avx512.h"
#include "cpu/matmul_float_panels_avx2.h"
#include "engine/dtype.h"
#include "tests/cpu/float_matrix.h"
#include "tests/cpu/isa_levels.h"
#include "tests/support/random_values.h"

namespace zinf {

using testing::FloatMatrix;
using testing::RandomValues;

namespace {

// One float matmul case: weights, bias and unpacked rows of x, with the portable kernel's output.
struct MatMulCase {
  DType dtype;
  int64_t rows, cols, tokens, x_stride;
  const FloatMatrix& w;
  const std::vector<float>& bias_values;
  const Weight& bias;
  const std::vector<float>& x;
  const std::vector<float>& portable;
};

// The shapes multiplied: rows are split at row 5 between two calls.
struct MatMulShapes {
  int64_t rows;
  std::vector<int64_t> cols, tokens;
};
// Split 5 + 41: a lone token's 8-row tiles 5 rows apart and one row left; 3-row tiles with and
// without leftovers. 2053 and 5632 columns in spans (f32, AVX-512); 61 in unequal chunks (AVX2
// panel walk, pinned).
const MatMulShapes kShapes{46, {1, 7, 8, 13, 61, 64, 100, 773, 2053, 5632}, {1, 2, 3, 12, 13, 27}};

template <typename Check>
void ForEachMatMulCase(Check check, const MatMulShapes& shapes = kShapes) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t cols : shapes.cols) {
      const int64_t rows = shapes.rows;
      FloatMatrix w(RandomValues(rows * cols, 7 + cols), dtype, rows, cols);
      const std::vector<float> bias_values = RandomValues(rows, 8);
      const Weight bias{bias_values.data(), DType::kF32, 1, rows, 0};
      for (int64_t tokens : shapes.tokens) {
        const int64_t x_stride = cols + 3;  // rows of x are not packed
        const std::vector<float> x = RandomValues(tokens * x_stride, 9 + tokens);
        std::vector<float> portable(tokens * rows);
        cpu::MatMulRows(x.data(), x_stride, tokens, w.weight, bias, portable.data(), rows, 0, rows,
                        cpu::CpuIsa::kPortable);
        check(MatMulCase{dtype, rows, cols, tokens, x_stride, w, bias_values, bias, x, portable});
      }
    }
  }
}

void CheckMatMulLevel(cpu::CpuIsa isa, const MatMulShapes& shapes = kShapes) {
  testing::RequireCpuIsa(isa);
  ForEachMatMulCase(
      [isa](const MatMulCase& c) {
        std::vector<float> fast(c.tokens * c.rows, -1.0f);
        cpu::MatMulRows(c.x.data(), c.x_stride, c.tokens, c.w.weight, c.bias, fast.data(), c.rows,
                        0, 5, isa);
        cpu::MatMulRows(c.x.data(), c.x_stride, c.tokens, c.w.weight, c.bias, fast.data(), c.rows,
                        5, c.rows, isa);
        INFO(DTypeName(c.dtype) << " cols " << c.cols << " tokens " << c.tokens << " level "
                                << cpu::CpuIsaName(isa));
        CHECK(std::memcmp(c.portable.data(), fast.data(), c.portable.size() * sizeof(float)) == 0);
      },
      shapes);
}

}  // namespace

TEST_CASE("float matmul: the portable kernel agrees with a float64 product") {
  ForEachMatMulCase([](const MatMulCase& c) {
    if (c.dtype != DType::kF32) return;
    for (int64_t t = 0; t < c.tokens; ++t) {
      for (int64_t r = 0; r < c.rows; ++r) {
        double exact = c.bias_values[r];
        for (int64_t k = 0; k < c.cols; ++k)
          exact += double{c.x[t * c.x_stride + k]} * c.w.f32[r * c.cols + k];
        CHECK(c.portable[t * c.rows + r] == Approx(exact).epsilon(1e-4).margin(1e-4));
      }
    }
  });
}

TEST_CASE("float matmul: the AVX2 kernel equals the portable one bit for bit", "[avx2]") {
  CheckMatMulLevel(cpu::CpuIsa::kAvx2);
}

TEST_CASE("float matmul: the AVX2 panel walk equals the portable kernel in any shape", "[avx2]") {
  // Chunks of 2 to 4 steps (61 columns: 3 + 3 + 1 and 4 + 3), blocks of 8 and 4 tokens (12, 13
  // and 27 tokens in several, some ending part full), panels of 6 and 3 rows (41 rows: single
  // rows left at the end; 5 rows: one tile and two single rows).
  for (const cpu::FloatPanelShape shape :
       {cpu::FloatPanelShape{16, 8, 6}, cpu::FloatPanelShape{24, 4, 3}}) {
    INFO("chunk " << shape.chunk_columns << " block " << shape.block_tokens << " panel "
                  << shape.panel_rows);
    cpu::PinFloatPanelShape(shape);
    CheckMatMulLevel(cpu::CpuIsa::kAvx2);
  }
  cpu::PinFloatPanelShape(std::nullopt);
}

TEST_CASE("float matmul: the AVX-512 kernel equals the portable one bit for bit", "[avx512]") {
  // Every tiling the start-up measurement can pick, and 4 KiB spans (several even in short rows),
  // in the default blocks and in blocks of 4 pairs (27 tokens in 4); f16 and bf16 rows converted
  // in each tile, widened a span at a time for any number of tiles, and widened only where a
  // block has the default's tiles (converted in each tile where fewer).
  struct Conversion {
    bool widen;
    int64_t widen_min_tiles;
  };
  for (const int64_t span_bytes : {int64_t{16} << 10, int64_t{0}, int64_t{4} << 10}) {
    for (const Conversion conversion : {Conversion{false, 1}, Conversion{true, 1},
                                        Conversion{true, cpu::PairTiling{}.widen_min_tiles}}) {
      for (const int64_t block_bytes : {cpu::PairTiling{}.block_bytes, int64_t{64}}) {
        INFO("span bytes " << span_bytes << ", blocks of " << block_bytes << " bytes, f16/bf16 "
                           << (conversion.widen ? "widened where a block has tiles: " +
                                                      std::to_string(conversion.widen_min_tiles)
                                                : std::string("converted in each tile")));
        cpu::PinPairTiling(cpu::PairTiling{span_bytes, conversion.widen, conversion.widen,
                                           block_bytes, conversion.widen_min_tiles});
        CheckMatMulLevel(cpu::CpuIsa::kAvx512);
      }
    }
  }
  cpu::PinPairTiling(std::nullopt);
}

TEST_CASE("float matmul: the AVX-512 kernel's full tiles write their sums a set of row groups "
          "at a time, any set and token count",
          "[avx512]") {
  // 105 rows after the split: sets of 8, 8 and 1 row groups of 6, then 3 single rows; 8 to 35
  // tokens: 1 to 4 full tiles, some with an edge tile after them; 773 columns have a tail (no
  // staged sums); blocks of 4 pairs stage one tile per block.
  const MatMulShapes shapes{110, {64, 773, 2053}, {8, 16, 27, 35}};
  for (const int64_t span_bytes : {int64_t{16} << 10, int64_t{0}}) {
    for (const int64_t block_bytes : {cpu::PairTiling{}.block_bytes, int64_t{64}}) {
      INFO("span bytes " << span_bytes << ", blocks of " << block_bytes << " bytes");
      cpu::PinPairTiling(cpu::PairTiling{span_bytes, false, false, block_bytes});
      CheckMatMulLevel(cpu::CpuIsa::kAvx512, shapes);
    }
  }
  cpu::PinPairTiling(std::nullopt);
}

TEST_CASE(
    "cpu::CpuBackend::MatMuls equals one MatMul per projection, also after x changes in place") {
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
  const std::vector<Backend::Projection> projections = {{weights[0].weight, {}, shared[0]},
                                                        {weights[1].weight, {}, shared[1]},
                                                        {weights[2].weight, {}, shared[2]}};
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
