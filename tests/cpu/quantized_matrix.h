// A weight matrix quantized as the converter writes it, for the CPU kernel tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backend.h"
#include "engine/quantized.h"

namespace zinf::testing {

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

}  // namespace zinf::testing
