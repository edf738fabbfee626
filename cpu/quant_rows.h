// A quantized weight matrix seen by the CPU kernels: where each row's values and scales lie in
// its bytes (the layout of engine/quantized.h), for every kernel level alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/backend.h"
#include "engine/quantized.h"

namespace zinf::cpu {

// One weight matrix in a quantized layout (int8 or int4), with the pointers each row needs.
struct QuantRows {
  const uint8_t* values;
  const std::byte* scales;
  int64_t row_bytes;
  int64_t groups;
  int64_t cols;
  int group_size;

  explicit QuantRows(const Weight& w) {
    const QuantLayout layout = LayoutOf(w.dtype, w.rows, w.cols, w.group_size);
    values = static_cast<const uint8_t*>(w.data);
    scales = static_cast<const std::byte*>(w.data) + layout.scales_offset();
    row_bytes = layout.row_bytes();
    groups = layout.groups();
    cols = w.cols;
    group_size = w.group_size;
  }
  const uint8_t* row(int64_t r) const { return values + r * row_bytes; }
  const int8_t* i8_row(int64_t r) const { return reinterpret_cast<const int8_t*>(row(r)); }
  float i8_scale(int64_t r) const {
    float scale;
    std::memcpy(&scale, scales + r * 4, 4);
    return scale;
  }
  const uint16_t* q4_params(int64_t r) const {
    return reinterpret_cast<const uint16_t*>(scales) + r * groups * 2;
  }
};

}  // namespace zinf::cpu
