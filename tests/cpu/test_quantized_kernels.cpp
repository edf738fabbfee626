// int8 / int4 quantization and the CPU kernels that read it: the weight quantizers' error bounds,
// kernels against a float64 product of their operands, the AVX2, AVX-512 and AMX levels against
// portable bit for bit, and batch invariance (the activation quantizer: test_q8_activations.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/matmul.h"
#include "cpu/matmul_q4_avx512.h"
#include "cpu/matmul_quant.h"
#include "cpu/q8_activations.h"
#include "engine/quantized.h"
#include "tests/cpu/isa_levels.h"
#include "tests/cpu/quantized_matrix.h"
#include "tests/support/random_values.h"

namespace zinf {

using testing::QuantizedMatrix;
using testing::RandomValues;

TEST_CASE("int8 rows round-trip within half a step of their scale") {
  for (int64_t cols : {1, 7, 64, 172}) {
    const std::vector<float> values = RandomValues(3 * cols, 11 + cols);
    const QuantizedMatrix q(values, DType::kI8, 3, cols, 0);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < 3; ++r) {
      DequantizeRow(q.weight, r, row.data());
      float max_abs = 0;
      for (int64_t c = 0; c < cols; ++c)
        max_abs = std::max(max_abs, std::fabs(values[r * cols + c]));
      for (int64_t c = 0; c < cols; ++c) {
        INFO("cols " << cols << " row " << r << " col " << c);
        CHECK(std::fabs(row[c] - values[r * cols + c]) <= max_abs / 127.0f * 0.5001f);
      }
    }
  }
}

TEST_CASE("int4 groups round-trip within half a step, partial last groups included") {
  for (int group_size : {32, 64, 128}) {
    for (int64_t cols : {32, 172, 200, 9}) {
      const std::vector<float> values = RandomValues(2 * cols, 7 + cols);
      const QuantizedMatrix q(values, DType::kQ4, 2, cols, group_size);
      std::vector<float> row(cols);
      for (int64_t r = 0; r < 2; ++r) {
        DequantizeRow(q.weight, r, row.data());
        for (int64_t begin = 0; begin < cols; begin += group_size) {
          const int64_t end = std::min(cols, begin + group_size);
          float low = values[r * cols + begin], high = low;
          for (int64_t c = begin; c < end; ++c) {
            low = std::min(low, values[r * cols + c]);
            high = std::max(high, values[r * cols + c]);
          }
          // Half a step, plus the f16 rounding of the group's minimum and scale.
          const float bound = (high - low) / 15.0f * 0.51f + std::fabs(low) * 1e-3f + 1e-6f;
          for (int64_t c = begin; c < end; ++c) {
            INFO("group " << group_size << " cols " << cols << " col " << c);
            CHECK(std::fabs(row[c] - values[r * cols + c]) <= bound);
          }
        }
      }
    }
  }
}

TEST_CASE("a constant row quantizes exactly") {
  const std::vector<float> values(100, 0.25f);
  for (DType dtype : {DType::kI8, DType::kQ4}) {
    const QuantizedMatrix q(values, dtype, 1, 100, 32);
    std::vector<float> row(100);
    DequantizeRow(q.weight, 0, row.data());
    for (float v : row) CHECK(v == 0.25f);
  }
}

// The activations a quantized kernel multiplies: each token's row through its int8 blocks (32
// elements for int8 weights, the group for int4) and back.
std::vector<float> Q8RoundTrip(const std::vector<float>& x, int64_t tokens, int64_t cols,
                               int block = cpu::kQ8BlockElements) {
  const int64_t blocks = (cols + block - 1) / block;
  std::vector<int8_t> values(blocks * block);
  std::vector<float> scales(blocks), out(x.size());
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::QuantizeRowQ8(&x[t * cols], cols, values.data(), scales.data(), false, block);
    for (int64_t c = 0; c < cols; ++c) out[t * cols + c] = values[c] * scales[c / block];
  }
  return out;
}

namespace {

void CheckQuantizedMatMulFloat64(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  // Both multiply the activations' int8 blocks (exactly representable as q · scale): of 32 for
  // int8, of the group for int4; and the dequantized weights.
  struct Shape {
    DType dtype;
    int64_t rows, cols;
    int group_size;
  };
  const Shape shapes[] = {{DType::kI8, 13, 64, 0},   {DType::kI8, 9, 172, 0},
                          {DType::kI8, 5, 37, 0},    {DType::kI8, 6, 7, 0},
                          {DType::kI8, 7, 768, 0},   {DType::kQ4, 13, 64, 32},
                          {DType::kQ4, 9, 172, 32},  {DType::kQ4, 6, 172, 64},
                          {DType::kQ4, 7, 300, 128}, {DType::kQ4, 4, 44, 32}};
  for (const Shape& shape : shapes) {
    const std::vector<float> values = RandomValues(shape.rows * shape.cols, 3);
    const QuantizedMatrix q(values, shape.dtype, shape.rows, shape.cols, shape.group_size);
    const std::vector<float> bias_values = RandomValues(shape.rows, 4);
    const Weight bias{bias_values.data(), DType::kF32, 1, shape.rows, 0};
    const int64_t tokens = 5;
    const std::vector<float> x = RandomValues(tokens * shape.cols, 5);
    const std::vector<float> operand = shape.dtype == DType::kI8
                                           ? Q8RoundTrip(x, tokens, shape.cols)
                                           : Q8RoundTrip(x, tokens, shape.cols, shape.group_size);
    std::vector<float> dequantized(shape.rows * shape.cols);
    for (int64_t r = 0; r < shape.rows; ++r)
      DequantizeRow(q.weight, r, &dequantized[r * shape.cols]);
    std::vector<float> out(tokens * shape.rows);
    cpu::MatMulRowsQuantized(x.data(), shape.cols, tokens, q.weight, bias, out.data(), shape.rows,
                             0, shape.rows, isa);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t r = 0; r < shape.rows; ++r) {
        double exact = bias_values[r], magnitude = std::fabs(bias_values[r]);
        for (int64_t c = 0; c < shape.cols; ++c) {
          const double product =
              static_cast<double>(operand[t * shape.cols + c]) * dequantized[r * shape.cols + c];
          exact += product;
          magnitude += std::fabs(product);
        }
        INFO(DTypeName(shape.dtype) << " " << shape.rows << "x" << shape.cols << " g"
                                    << shape.group_size << " " << cpu::CpuIsaName(isa));
        CHECK(std::fabs(out[t * shape.rows + r] - exact) <= 1e-5 * magnitude);
      }
    }
  }
}

}  // namespace

TEST_CASE("quantized matmul equals a float64 product of the operands it multiplies") {
  CheckQuantizedMatMulFloat64(cpu::CpuIsa::kPortable);
}

TEST_CASE("quantized matmul at AVX2 equals a float64 product of its operands", "[avx2]") {
  CheckQuantizedMatMulFloat64(cpu::CpuIsa::kAvx2);
}

TEST_CASE("quantized matmul at AVX-512 equals a float64 product of its operands", "[avx512]") {
  CheckQuantizedMatMulFloat64(cpu::CpuIsa::kAvx512);
}

namespace {

// The product at `isa` with its rows split at `split`, as a thread pool would split them: true
// if it equals `portable` bit for bit.
bool SplitProductMatches(const std::vector<float>& x, int64_t cols, int64_t tokens, const Weight& w,
                         const Weight& bias, int64_t rows, int64_t split, cpu::CpuIsa isa,
                         const std::vector<float>& portable) {
  std::vector<float> vector(tokens * rows, -1.0f);
  cpu::MatMulRowsQuantized(x.data(), cols, tokens, w, bias, vector.data(), rows, 0, split, isa);
  cpu::MatMulRowsQuantized(x.data(), cols, tokens, w, bias, vector.data(), rows, split, rows, isa);
  return std::memcmp(portable.data(), vector.data(), portable.size() * sizeof(float)) == 0;
}

void CheckInt8MatMulLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  for (int64_t cols : {1, 7, 31, 32, 33, 37, 64, 95, 172, 300, 1040}) {
    for (int64_t rows : {37, 47, 70}) {
      // 8- and 16-row tiles, with 1, 2, 4, 5, 7 and 8 rows left over across the splits below; a
      // lone token's 16-row tiles take rows 1 to 4 apart.
      QuantizedMatrix q(RandomValues(rows * cols, 41 + cols), DType::kI8, rows, cols, 0);
      // −128 is outside the quantizer's range but a file may hold it: every kernel multiplies it
      // exactly. One in the first row, one in the last column (a partial block) of row 20.
      auto* values = reinterpret_cast<int8_t*>(q.bytes.data());
      values[0] = -128;
      values[20 * cols + cols - 1] = -128;
      const std::vector<float> bias_values = RandomValues(rows, 42);
      const Weight bias{bias_values.data(), DType::kF32, 1, rows, 0};
      // AVX-512: row-pair tiles to 8 tokens (8 rows to 4, 4 rows beyond), then token lanes (15 a
      // group); AMX from 5 tokens (16 a group); AVX2 lanes from 8 (8 alone: one half-width
      // group, 4-row tiles), 1-4 tokens past whole halves (9, 12, 17, 19) left to the one-token
      // tiles; partial last groups.
      for (int64_t tokens : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 19, 31, 40}) {
        std::vector<float> x = RandomValues(tokens * cols, 43 + tokens);
        // Exact zeros, a whole zero block (scale 0) and extremes.
        for (int64_t i = 0; i < tokens * cols; i += 5) x[i] = 0.0f;
        if (cols >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
        x[tokens * cols - 1] = -50.0f;
        std::vector<float> portable(tokens * rows);
        cpu::MatMulRowsQuantized(x.data(), cols, tokens, q.weight, bias, portable.data(), rows, 0,
                                 rows, cpu::CpuIsa::kPortable);
        for (int64_t split : {int64_t{0}, int64_t{5}, int64_t{16}, int64_t{21}, int64_t{23}}) {
          INFO(cpu::CpuIsaName(isa)
               << " cols " << cols << " tokens " << tokens << " split " << split);
          CHECK(SplitProductMatches(x, cols, tokens, q.weight, bias, rows, split, isa, portable));
        }
      }
    }
  }
  // Rows wider than a token block (the walks' outer loop over groups of tokens runs twice), with
  // strides wider than the rows.
  const int64_t rows = 17, cols = 45000, tokens = 17, x_stride = cols + 3, out_stride = rows + 2;
  const QuantizedMatrix q(RandomValues(rows * cols, 44), DType::kI8, rows, cols, 0);
  const std::vector<float> x = RandomValues(tokens * x_stride, 45);
  std::vector<float> portable(tokens * out_stride, -1.0f), vector(tokens * out_stride, -1.0f);
  cpu::MatMulRowsQuantized(x.data(), x_stride, tokens, q.weight, {}, portable.data(), out_stride, 0,
                           rows, cpu::CpuIsa::kPortable);
  cpu::MatMulRowsQuantized(x.data(), x_stride, tokens, q.weight, {}, vector.data(), out_stride, 0,
                           rows, isa);
  INFO(cpu::CpuIsaName(isa) << " cols " << cols << " tokens " << tokens);
  CHECK(std::memcmp(portable.data(), vector.data(), portable.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("int8 matmul: the AVX2 kernel equals the portable one bit for bit", "[avx2]") {
  CheckInt8MatMulLevel(cpu::CpuIsa::kAvx2);
}

TEST_CASE("int8 matmul: the AVX-512 kernel equals the portable one bit for bit", "[avx512]") {
  CheckInt8MatMulLevel(cpu::CpuIsa::kAvx512);
}

TEST_CASE("int8 matmul: the AMX kernel equals the portable one bit for bit", "[amx]") {
  CheckInt8MatMulLevel(cpu::CpuIsa::kAmx);
}

namespace {

void CheckInt4MatMulLevel(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  // Up to 8 tokens stream 16-row tiles in passes of up to 4 (fewer as the group size grows; at
  // the amx level, at most two passes: 6 tokens at groups of 64 do, 7 take AMX tiles); more run
  // tiles of other shapes, with narrower tiles for the tokens and rows left over. All
  // must give the portable bits, with biases in f32 and bf16, partial blocks and groups, and row
  // ranges split as a thread pool would.
  for (int group_size : {32, 64, 128}) {
    for (int64_t cols : {1, 7, 31, 33, 64, 95, 172, 300, 1040, 4100}) {
      const int64_t rows = 37;  // two 16-row few-token tiles, then a pair and an odd row
      QuantizedMatrix q(RandomValues(rows * cols, 51 + cols), DType::kQ4, rows, cols, group_size);
      const std::vector<float> bias_f32 = RandomValues(rows, 52);
      std::vector<uint16_t> bias_bf16(rows);
      for (int64_t r = 0; r < rows; ++r) bias_bf16[r] = static_cast<uint16_t>(0x3f80 + 7 * r);
      const Weight biases[] = {{bias_f32.data(), DType::kF32, 1, rows, 0},
                               {bias_bf16.data(), DType::kBF16, 1, rows, 0}};
      for (const Weight& bias : biases) {
        for (int64_t tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 17, 19, 40}) {
          std::vector<float> x = RandomValues(tokens * cols, 53 + tokens);
          x[tokens * cols - 1] = -50.0f;
          std::vector<float> portable(tokens * rows);
          cpu::MatMulRowsQuantized(x.data(), cols, tokens, q.weight, bias, portable.data(), rows, 0,
                                   rows, cpu::CpuIsa::kPortable);
          for (int64_t split : {int64_t{0}, int64_t{5}, int64_t{21}}) {
            INFO(cpu::CpuIsaName(isa)
                 << " group " << group_size << " cols " << cols << " tokens " << tokens << " split "
                 << split << " bias " << DTypeName(bias.dtype));
            CHECK(SplitProductMatches(x, cols, tokens, q.weight, bias, rows, split, isa, portable));
          }
        }
      }
    }
  }
  // Sums at their largest: nibbles of 15 (each group's first value its minimum) against values
  // of ±127, so a block's 16-bit partial sums (the AVX2 token lanes) and the 16-bit sums the
  // one-token tiles add across rows come within 7% of the limit.
  for (int group_size : {32, 64, 128}) {
    for (const int64_t tokens : {1, 17}) {
      const int64_t cols = 256, rows = 21;
      std::vector<float> values(rows * cols, 1.0f);
      for (int64_t i = 0; i < rows * cols; i += group_size) values[i] = -1.0f;
      QuantizedMatrix q(values, DType::kQ4, rows, cols, group_size);
      std::vector<float> x(tokens * cols);
      for (int64_t i = 0; i < tokens * cols; ++i) x[i] = (i / cols) % 2 ? -3.0f : 3.0f;
      std::vector<float> portable(tokens * rows);
      cpu::MatMulRowsQuantized(x.data(), cols, tokens, q.weight, {}, portable.data(), rows, 0, rows,
                               cpu::CpuIsa::kPortable);
      INFO(cpu::CpuIsaName(isa) << " largest sums, group " << group_size << " tokens " << tokens);
      CHECK(SplitProductMatches(x, cols, tokens, q.weight, {}, rows, 2, isa, portable));
    }
  }
  // Rows so wide that each group of 16 tokens in lanes outgrows the kernels' L2 token block.
  const int64_t cols = 45000, rows = 18, tokens = 40;
  QuantizedMatrix q(RandomValues(rows * cols, 54), DType::kQ4, rows, cols, 32);
  const std::vector<float> x = RandomValues(tokens * cols, 55);
  std::vector<float> portable(tokens * rows);
  cpu::MatMulRowsQuantized(x.data(), cols, tokens, q.weight, {}, portable.data(), rows, 0, rows,
                           cpu::CpuIsa::kPortable);
  INFO(cpu::CpuIsaName(isa) << " cols " << cols << " tokens " << tokens);
  CHECK(SplitProductMatches(x, cols, tokens, q.weight, {}, rows, 0, isa, portable));
}

}  // namespace

TEST_CASE("int4 matmul: the AVX2 kernel equals the portable one bit for bit", "[avx2]") {
  CheckInt4MatMulLevel(cpu::CpuIsa::kAvx2);
}

// Both ways the AVX-512 kernel takes 7-8 tokens (the AMX kernel hands it few tokens too).
void CheckInt4MatMulEachFewTokenSetting(cpu::CpuIsa isa) {
  for (cpu::Q4FewTokens setting : {cpu::Q4FewTokens::kRowTiles, cpu::Q4FewTokens::kYmmLanes}) {
    INFO((setting == cpu::Q4FewTokens::kYmmLanes ? "256-bit token lanes" : "16-row tiles"));
    cpu::PinQ4FewTokens(setting);
    CheckInt4MatMulLevel(isa);
  }
  cpu::PinQ4FewTokens(std::nullopt);
}

TEST_CASE("int4 matmul: the AVX-512 kernel equals the portable one bit for bit", "[avx512]") {
  CheckInt4MatMulEachFewTokenSetting(cpu::CpuIsa::kAvx512);
}

TEST_CASE("int4 matmul: the AMX kernel equals the portable one bit for bit", "[amx]") {
  CheckInt4MatMulEachFewTokenSetting(cpu::CpuIsa::kAmx);
}

namespace {

// x·w for w = −128 is −128·x at every level (the AVX2 kernel moves the sign to x, so |w| = 128
// fits its unsigned operand).
struct MinusOneTwentyEightCase {
  static constexpr int64_t rows = 20, cols = 64, tokens = 6;
  // All 127 (scale 1/127) but for a −128 on the diagonal.
  QuantizedMatrix q{std::vector<float>(rows * cols, 1.0f), DType::kI8, rows, cols, 0};
  std::vector<float> x = std::vector<float>(tokens * cols, 0.0f);

  MinusOneTwentyEightCase() {
    auto* values = reinterpret_cast<int8_t*>(q.bytes.data());
    for (int64_t r = 0; r < rows; ++r) values[r * cols + r] = -128;
    for (int64_t t = 0; t < tokens; ++t) {
      x[t * cols + 63] = 127.0f;  // block 1's scale 1: the −128 bytes meet exact integers
      for (int64_t c = 0; c < 32; ++c) x[t * cols + c] = (c + t) % 3 == 0 ? -1.0f : 0.5f;
    }
  }
  std::vector<float> Product(cpu::CpuIsa isa) const {
    std::vector<float> out(tokens * rows, -1.0f);
    cpu::MatMulRowsQuantized(x.data(), cols, tokens, q.weight, {}, out.data(), rows, 0, rows, isa);
    return out;
  }
};

void CheckMinus128Level(cpu::CpuIsa isa) {
  testing::RequireCpuIsa(isa);
  const MinusOneTwentyEightCase minus128;
  const std::vector<float> portable = minus128.Product(cpu::CpuIsa::kPortable);
  const std::vector<float> vector = minus128.Product(isa);
  INFO(cpu::CpuIsaName(isa));
  CHECK(std::memcmp(portable.data(), vector.data(), portable.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("int8 matmul: a −128 weight is multiplied exactly") {
  const MinusOneTwentyEightCase minus128;
  const int64_t rows = minus128.rows, cols = minus128.cols, tokens = minus128.tokens;
  const std::vector<float>& x = minus128.x;
  const std::vector<float> portable = minus128.Product(cpu::CpuIsa::kPortable);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      // Block 0 (scale 1/127): x = −1 or 0.5 quantize to −127 or 64, against 127 but for the
      // −128 at column r. Block 1 (scale 1): 127 · 127. Row scale 1/127.
      int64_t block0 = 0;
      for (int64_t c = 0; c < 32; ++c) {
        const int64_t qx = x[t * cols + c] < 0 ? -127 : 64;
        block0 += c == r ? -128 * qx : qx * 127;
      }
      const double expected = (block0 / 127.0 + 127.0 * 127.0) / 127.0;
      INFO("token " << t << " row " << r);
      CHECK(std::fabs(portable[t * rows + r] - expected) <= 1e-5 * std::fabs(expected));
    }
  }
}

TEST_CASE("int8 matmul: a −128 weight gives the portable bits at AVX2", "[avx2]") {
  CheckMinus128Level(cpu::CpuIsa::kAvx2);
}

TEST_CASE("int8 matmul: a −128 weight gives the portable bits at AVX-512", "[avx512]") {
  CheckMinus128Level(cpu::CpuIsa::kAvx512);
}

TEST_CASE("int8 matmul: a −128 weight gives the portable bits at AMX", "[amx]") {
  CheckMinus128Level(cpu::CpuIsa::kAmx);
}

TEST_CASE("int8 matmul: quantizing activations errs by at most half a step per block") {
  // |Σ w·(x − x̂)| ≤ Σ |w| · scale_block / 2, plus f32 rounding.
  const int64_t rows = 8, cols = 200, tokens = 3;
  const std::vector<float> values = RandomValues(rows * cols, 51);
  const QuantizedMatrix q(values, DType::kI8, rows, cols, 0);
  const std::vector<float> x = RandomValues(tokens * cols, 52, 3.0f);
  std::vector<float> out(tokens * rows), dequantized(cols);
  cpu::MatMulRows(x.data(), cols, tokens, q.weight, {}, out.data(), rows, 0, rows);
  std::vector<int8_t> xq(cpu::Q8Blocks(cols) * 32);
  std::vector<float> scales(cpu::Q8Blocks(cols));
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::QuantizeRowQ8(&x[t * cols], cols, xq.data(), scales.data(), false);
    for (int64_t r = 0; r < rows; ++r) {
      DequantizeRow(q.weight, r, dequantized.data());
      double exact = 0, bound = 0;
      for (int64_t c = 0; c < cols; ++c) {
        exact += static_cast<double>(x[t * cols + c]) * dequantized[c];
        bound += std::fabs(static_cast<double>(dequantized[c])) * scales[c / 32] / 2 +
                 1e-6 * std::fabs(static_cast<double>(x[t * cols + c]) * dequantized[c]);
      }
      INFO("token " << t << " row " << r);
      CHECK(std::fabs(out[t * rows + r] - exact) <= bound);
    }
  }
}

TEST_CASE("quantized matmul: a token's result does not depend on the batch or the kernel") {
  struct Shape {
    int64_t rows, cols, tokens, split;
  };
  // 9 tokens: 4 + 4 + 1 tiles; 100 tokens × 8192 columns: more than one L2 token block.
  const Shape shapes[] = {{11, 172, 9, 5}, {5, 8192, 100, 2}};
  for (DType dtype : {DType::kI8, DType::kQ4}) {
    for (const Shape& shape : shapes) {
      const int64_t rows = shape.rows, cols = shape.cols, tokens = shape.tokens;
      const QuantizedMatrix q(RandomValues(rows * cols, 8), dtype, rows, cols, 32);
      const std::vector<float> x = RandomValues(tokens * cols, 9);
      std::vector<float> batched(tokens * rows);
      cpu::MatMulRows(x.data(), cols, tokens, q.weight, {}, batched.data(), rows, 0, rows);
      for (int64_t t = 0; t < tokens; ++t) {
        std::vector<float> single(rows), portable(rows);
        // Rows split as a thread pool would.
        const float* xt = &x[t * cols];
        cpu::MatMulRows(xt, cols, 1, q.weight, {}, single.data(), rows, 0, shape.split);
        cpu::MatMulRows(xt, cols, 1, q.weight, {}, single.data(), rows, shape.split, rows);
        cpu::MatMulRowsQuantized(xt, cols, 1, q.weight, {}, portable.data(), rows, 0, rows,
                                 cpu::CpuIsa::kPortable);
        for (int64_t r = 0; r < rows; ++r) {
          INFO(DTypeName(dtype) << " cols " << cols << " token " << t << " row " << r);
          CHECK(single[r] == batched[t * rows + r]);
          CHECK(portable[r] == batched[t * rows + r]);
        }
      }
    }
  }
}

}  // namespace zinf
