// The products split their rows by measured thread speed (ThreadPool::ParallelForBalanced), so a
// row's bits must not depend on where a thread's range starts or ends: every weight type, at every
// level this CPU has, split three ways at many places, equals one call over all rows.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "cpu/isa.h"
#include "cpu/matmul.h"
#include "engine/dtype.h"
#include "engine/quantized.h"
#include "tests/cpu/float_matrix.h"
#include "tests/cpu/quantized_matrix.h"
#include "tests/support/random_values.h"

namespace zinf {

using testing::FloatMatrix;
using testing::QuantizedMatrix;
using testing::RandomValues;

namespace {

struct SplitCase {
  DType dtype;
  int group_size;
};

// The weights of `c` over `rows` × `cols` values, and the storage behind them.
struct CaseWeights {
  std::vector<FloatMatrix> floats;
  std::vector<QuantizedMatrix> quantized;
  Weight weight;

  CaseWeights(const SplitCase& c, const std::vector<float>& values, int64_t rows, int64_t cols) {
    if (IsQuantized(c.dtype)) {
      weight = quantized.emplace_back(values, c.dtype, rows, cols, c.group_size).weight;
    } else {
      weight = floats.emplace_back(values, c.dtype, rows, cols).weight;
    }
  }
};

}  // namespace

TEST_CASE("cpu matmul: a row's bits do not depend on where the rows are split") {
  constexpr int64_t kRows = 100, kCols = 320;  // 2.5 groups of 128: a partial last group
  const std::vector<float> values = RandomValues(kRows * kCols, 11);
  const std::vector<float> bias_values = RandomValues(kRows, 12);
  const Weight bias{bias_values.data(), DType::kF32, 1, kRows, 0};
  std::mt19937 rng(13);
  for (const SplitCase c :
       {SplitCase{DType::kF32, 0}, SplitCase{DType::kF16, 0}, SplitCase{DType::kBF16, 0},
        SplitCase{DType::kI8, 0}, SplitCase{DType::kQ4, 32}, SplitCase{DType::kQ4, 64},
        SplitCase{DType::kQ4, 128}}) {
    const CaseWeights w(c, values, kRows, kCols);
    for (int level = 0; level <= static_cast<int>(cpu::BestCpuIsa()); ++level) {
      const auto isa = static_cast<cpu::CpuIsa>(level);
      for (int64_t tokens : {1, 3, 8, 16, 40}) {
        const std::vector<float> x = RandomValues(tokens * kCols, 14 + tokens);
        std::vector<float> whole(tokens * kRows), split(tokens * kRows);
        cpu::MatMulRows(x.data(), kCols, tokens, w.weight, bias, whole.data(), kRows, 0, kRows,
                        isa);
        for (int trial = 0; trial < 8; ++trial) {
          // Half the trials on multiples of 16 rows (as the balanced split cuts), half anywhere.
          const int64_t step = trial % 2 == 0 ? 16 : 1;
          int64_t a = std::uniform_int_distribution<int64_t>(0, kRows / step)(rng) * step;
          int64_t b = std::uniform_int_distribution<int64_t>(0, kRows / step)(rng) * step;
          if (a > b) std::swap(a, b);
          std::fill(split.begin(), split.end(), 0.0f);
          for (const auto& [from, to] : {std::pair{int64_t{0}, a}, {a, b}, {b, kRows}}) {
            if (from < to) {
              cpu::MatMulRows(x.data(), kCols, tokens, w.weight, bias, split.data(), kRows, from,
                              to, isa);
            }
          }
          INFO(DTypeName(c.dtype) << " group " << c.group_size << " at " << cpu::CpuIsaName(isa)
                                  << ", " << tokens << " tokens, split at " << a << " and " << b);
          CHECK(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

}  // namespace zinf
