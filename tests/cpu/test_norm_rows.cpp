// RmsNormRow: the portable form agrees with a float64 RMSNorm, and the AVX2 form gives its bits
// (f32, f16 and bf16 weights, widths with and without a tail of 8, in place).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/matmul.h"
#include "cpu/norm_rows.h"
#include "engine/dtype.h"
#include "tests/cpu/isa_levels.h"
#include "tests/support/random_values.h"

namespace zinf {

using testing::RandomValues;

namespace {

// Calls check(x, weight, weight_values, portable) for each width and weight type, `portable` being
// the portable form's output.
template <typename Check>
void ForEachNormRow(Check check) {
  for (int64_t cols : {1, 7, 8, 13, 64, 768, 773}) {
    const std::vector<float> x = RandomValues(cols, 20 + cols);
    const std::vector<float> weight_values = RandomValues(cols, 40 + cols);
    std::vector<uint16_t> bf16(cols), f16(cols);
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t bits;
      std::memcpy(&bits, &weight_values[c], 4);
      bf16[c] = static_cast<uint16_t>(bits >> 16);
      f16[c] = F32ToF16(weight_values[c]);
    }
    // Subnormal, largest subnormal, infinity and negative zero f16 weights convert as WeightValue.
    const uint16_t special_f16[] = {0x0001, 0x03ff, 0x7c00, 0x8000};
    for (int64_t c = 0; c < cols && c < 4; ++c) f16[c * 5 % cols] = special_f16[c];
    for (const Weight& weight : {Weight{weight_values.data(), DType::kF32, 1, cols, 0},
                                 Weight{f16.data(), DType::kF16, 1, cols, 0},
                                 Weight{bf16.data(), DType::kBF16, 1, cols, 0}}) {
      INFO("cols " << cols << " " << DTypeName(weight.dtype));
      std::vector<float> portable(cols);
      cpu::RmsNormRow(x.data(), weight, 1e-5f, cols, portable.data(), cpu::CpuIsa::kPortable);
      check(x, weight, weight_values, portable);
    }
  }
}

}  // namespace

TEST_CASE("RmsNormRow: the portable form agrees with a float64 RMSNorm") {
  ForEachNormRow([](const std::vector<float>& x, const Weight& weight,
                    const std::vector<float>& weight_values, const std::vector<float>& portable) {
    const int64_t cols = weight.cols;
    double sum_squares = 0;
    for (float v : x) sum_squares += double{v} * v;
    const double scale = 1.0 / std::sqrt(sum_squares / cols + 1e-5);
    for (int64_t c = 0; c < cols; ++c) {
      const double w = weight.dtype == DType::kF32 ? weight_values[c] : cpu::WeightValue(weight, c);
      CHECK(portable[c] == Approx(x[c] * scale * w).epsilon(1e-6).margin(1e-7));
    }
  });
}

TEST_CASE("RmsNormRow: the AVX2 form equals the portable one bit for bit, in place", "[avx2]") {
  testing::RequireCpuIsa(cpu::CpuIsa::kAvx2);
  ForEachNormRow([](const std::vector<float>& x, const Weight& weight, const std::vector<float>&,
                    const std::vector<float>& portable) {
    const int64_t cols = weight.cols;
    std::vector<float> in_place = x;
    cpu::RmsNormRow(in_place.data(), weight, 1e-5f, cols, in_place.data(), cpu::CpuIsa::kAvx2);
    CHECK(std::memcmp(portable.data(), in_place.data(), cols * sizeof(float)) == 0);
  });
}

}  // namespace zinf
