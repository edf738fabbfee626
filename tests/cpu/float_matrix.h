// A weight matrix stored as f32, f16 or bf16, for the CPU kernel tests.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend.h"
#include "engine/dtype.h"

namespace zinf::testing {

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

}  // namespace zinf::testing
