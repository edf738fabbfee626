// int8 / int4 quantization and the CPU kernels that read it: error bounds of the quantizers,
// kernel results against a float64 product with the dequantized weights, and batch invariance.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "engine/cpu_matmul.h"
#include "engine/cpu_matmul_quant.h"
#include "engine/quantized.h"

namespace zinf {

namespace {

std::vector<float> RandomValues(size_t count, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

// A quantized copy of `values` ([rows, cols]) in its layout, as the converter writes it.
struct QuantizedMatrix {
  std::vector<std::byte> bytes;
  Weight weight;

  QuantizedMatrix(const std::vector<float>& values, DType dtype, int64_t rows, int64_t cols,
                  int group_size) {
    const QuantLayout layout = LayoutOf(dtype, rows, cols, group_size);
    bytes.assign(layout.total_bytes(), std::byte{0xAB});  // garbage in the padding must not matter
    for (int64_t r = 0; r < rows; ++r) {
      auto* row_values = reinterpret_cast<uint8_t*>(bytes.data() + r * layout.row_bytes());
      std::byte* scales = bytes.data() + layout.scales_offset();
      if (dtype == DType::kI8) {
        QuantizeRowI8(&values[r * cols], cols, reinterpret_cast<int8_t*>(row_values),
                      reinterpret_cast<float*>(scales) + r);
      } else {
        QuantizeRowQ4(&values[r * cols], cols, group_size, row_values,
                      reinterpret_cast<uint16_t*>(scales) + r * layout.groups() * 2);
      }
    }
    weight = {bytes.data(), dtype, rows, cols, dtype == DType::kQ4 ? group_size : 0};
  }
};

}  // namespace

TEST_CASE("int8 rows round-trip within half a step of their scale") {
  for (int64_t cols : {1, 7, 64, 172}) {
    const std::vector<float> values = RandomValues(3 * cols, 11 + cols);
    const QuantizedMatrix q(values, DType::kI8, 3, cols, 0);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < 3; ++r) {
      DequantizeRow(q.weight, r, row.data());
      float max_abs = 0;
      for (int64_t c = 0; c < cols; ++c) max_abs = std::max(max_abs, std::fabs(values[r * cols + c]));
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

TEST_CASE("quantized matmul equals a float64 product with the dequantized weights") {
  struct Shape {
    DType dtype;
    int64_t rows, cols;
    int group_size;
  };
  const Shape shapes[] = {{DType::kI8, 13, 64, 0},   {DType::kI8, 9, 172, 0},
                          {DType::kI8, 5, 37, 0},    {DType::kQ4, 13, 64, 32},
                          {DType::kQ4, 9, 172, 32},  {DType::kQ4, 6, 172, 64},
                          {DType::kQ4, 7, 300, 128}, {DType::kQ4, 4, 44, 32}};
  for (const Shape& shape : shapes) {
    const std::vector<float> values = RandomValues(shape.rows * shape.cols, 3);
    const QuantizedMatrix q(values, shape.dtype, shape.rows, shape.cols, shape.group_size);
    const std::vector<float> bias_values = RandomValues(shape.rows, 4);
    const Weight bias{bias_values.data(), DType::kF32, 1, shape.rows, 0};
    const int64_t tokens = 5;
    const std::vector<float> x = RandomValues(tokens * shape.cols, 5);
    std::vector<float> dequantized(shape.rows * shape.cols);
    for (int64_t r = 0; r < shape.rows; ++r)
      DequantizeRow(q.weight, r, &dequantized[r * shape.cols]);
    for (bool avx2 : {false, true}) {
      if (avx2 && !cpu::UsingAvx2Kernels()) continue;
      std::vector<float> out(tokens * shape.rows);
      cpu::MatMulRowsQuantized(x.data(), shape.cols, tokens, q.weight, bias, out.data(),
                               shape.rows, 0, shape.rows, avx2);
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t r = 0; r < shape.rows; ++r) {
          double exact = bias_values[r], magnitude = std::fabs(bias_values[r]);
          for (int64_t c = 0; c < shape.cols; ++c) {
            exact += static_cast<double>(x[t * shape.cols + c]) * dequantized[r * shape.cols + c];
            magnitude += std::fabs(static_cast<double>(x[t * shape.cols + c]) *
                                   dequantized[r * shape.cols + c]);
          }
          INFO(DTypeName(shape.dtype) << " " << shape.rows << "x" << shape.cols << " g"
                                      << shape.group_size << " avx2 " << avx2);
          CHECK(std::fabs(out[t * shape.rows + r] - exact) <= 1e-5 * magnitude);
        }
      }
    }
  }
}

TEST_CASE("quantized matmul: a token's result does not depend on the batch or the kernel") {
  for (DType dtype : {DType::kI8, DType::kQ4}) {
    const int64_t rows = 11, cols = 172;
    const QuantizedMatrix q(RandomValues(rows * cols, 8), dtype, rows, cols, 32);
    const int64_t tokens = 7;
    const std::vector<float> x = RandomValues(tokens * cols, 9);
    std::vector<float> batched(tokens * rows);
    cpu::MatMulRows(x.data(), cols, tokens, q.weight, {}, batched.data(), rows, 0, rows);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<float> single(rows), portable(rows);
      // Rows split as a thread pool would: [0, 5) and [5, 11).
      cpu::MatMulRows(&x[t * cols], cols, 1, q.weight, {}, single.data(), rows, 0, 5);
      cpu::MatMulRows(&x[t * cols], cols, 1, q.weight, {}, single.data(), rows, 5, rows);
      cpu::MatMulRowsQuantized(&x[t * cols], cols, 1, q.weight, {}, portable.data(), rows, 0,
                               rows, false);
      for (int64_t r = 0; r < rows; ++r) {
        INFO(DTypeName(dtype) << " token " << t << " row " << r);
        CHECK(single[r] == batched[t * rows + r]);
        CHECK(portable[r] == batched[t * rows + r]);
      }
    }
  }
}

}  // namespace zinf
