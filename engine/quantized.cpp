// Quantization at conversion time and the scalar dequantization the reference paths use; the
// matrix-product kernels read the same layout directly (cpu/matmul_quant.cpp).
#include "engine/quantized.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/checkpoint.h"
#include "engine/error.h"

namespace zinf {

namespace {

constexpr uint64_t AlignTo64(uint64_t value) { return (value + 63) & ~uint64_t{63}; }

}  // namespace

bool IsValidGroupSize(int group_size) {
  return std::find(std::begin(kQ4GroupSizes), std::end(kQ4GroupSizes), group_size) !=
         std::end(kQ4GroupSizes);
}

int64_t QuantLayout::groups() const {
  return dtype == DType::kQ4 ? (cols + group_size - 1) / group_size : 1;
}

int64_t QuantLayout::row_bytes() const {
  return dtype == DType::kQ4 ? groups() * group_size / 2 : cols;
}

uint64_t QuantLayout::scales_offset() const {
  return AlignTo64(static_cast<uint64_t>(rows) * static_cast<uint64_t>(row_bytes()));
}

uint64_t QuantLayout::total_bytes() const {
  const uint64_t per_row = dtype == DType::kQ4 ? static_cast<uint64_t>(groups()) * 4 : 4;
  return scales_offset() + static_cast<uint64_t>(rows) * per_row;
}

QuantLayout LayoutOf(DType dtype, int64_t rows, int64_t cols, int group_size) {
  ZINF_CHECK(IsQuantized(dtype), "{} is not a quantized dtype", DTypeName(dtype));
  ZINF_CHECK(dtype != DType::kQ4 || IsValidGroupSize(group_size), "int4 group size {}", group_size);
  return {dtype, rows, cols, dtype == DType::kQ4 ? group_size : 0};
}

uint64_t TensorBytes(DType dtype, int64_t rows, int64_t cols, int group_size) {
  if (IsQuantized(dtype)) return LayoutOf(dtype, rows, cols, group_size).total_bytes();
  return static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * DTypeSize(dtype);
}

void QuantizeRowI8(const float* row, int64_t cols, int8_t* values, float* scale) {
  float max_abs = 0;
  for (int64_t c = 0; c < cols; ++c) max_abs = std::max(max_abs, std::fabs(row[c]));
  *scale = max_abs / 127.0f;
  const float inverse = max_abs > 0 ? 127.0f / max_abs : 0.0f;
  for (int64_t c = 0; c < cols; ++c) {
    const float q = std::nearbyint(row[c] * inverse);
    values[c] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
}

void QuantizeRowQ4(const float* row, int64_t cols, int group_size, uint8_t* nibbles,
                   uint16_t* params) {
  const int64_t groups = (cols + group_size - 1) / group_size;
  std::memset(nibbles, 0, static_cast<size_t>(groups * group_size / 2));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t begin = g * group_size;
    const int64_t end = std::min(cols, begin + group_size);
    float low = row[begin], high = row[begin];
    for (int64_t c = begin; c < end; ++c) {
      low = std::min(low, row[c]);
      high = std::max(high, row[c]);
    }
    // Quantize against the f16-rounded parameters the kernels will use, so rounding to f16
    // adds no error beyond the nibble's own.
    const uint16_t scale_bits = F32ToF16((high - low) / 15.0f);
    const uint16_t min_bits = F32ToF16(low);
    params[2 * g] = scale_bits;
    params[2 * g + 1] = min_bits;
    const float scale = F16ToF32(scale_bits), minimum = F16ToF32(min_bits);
    const float inverse = scale > 0 ? 1.0f / scale : 0.0f;
    for (int64_t c = begin; c < end; ++c) {
      const int q =
          static_cast<int>(std::clamp(std::nearbyint((row[c] - minimum) * inverse), 0.0f, 15.0f));
      const int64_t block = c / kQ4BlockElements, in_block = c % kQ4BlockElements;
      uint8_t& byte = nibbles[block * 16 + in_block % 16];
      byte |= static_cast<uint8_t>(in_block < 16 ? q : q << 4);
    }
  }
}

float QuantizedValue(const Weight& w, int64_t idx) {
  const QuantLayout layout = LayoutOf(w.dtype, w.rows, w.cols, w.group_size);
  const auto* base = static_cast<const std::byte*>(w.data);
  const int64_t row = idx / w.cols, col = idx % w.cols;
  const auto* values = reinterpret_cast<const uint8_t*>(base) + row * layout.row_bytes();
  if (w.dtype == DType::kI8) {
    float scale;
    std::memcpy(&scale, base + layout.scales_offset() + row * 4, 4);
    return static_cast<int8_t>(values[col]) * scale;
  }
  const auto* params = reinterpret_cast<const uint16_t*>(base + layout.scales_offset()) +
                       (row * layout.groups() + col / w.group_size) * 2;
  return std::fma(static_cast<float>(Q4Nibble(values, col)), F16ToF32(params[0]),
                  F16ToF32(params[1]));
}

void DequantizeRow(const Weight& w, int64_t row, float* out) {
  const auto* base = static_cast<const std::byte*>(w.data);
  if (!IsQuantized(w.dtype)) {
    ConvertToF32(w.dtype, base + row * w.cols * DTypeSize(w.dtype), out, w.cols);
    return;
  }
  const QuantLayout layout = LayoutOf(w.dtype, w.rows, w.cols, w.group_size);
  const auto* values = reinterpret_cast<const uint8_t*>(base) + row * layout.row_bytes();
  if (w.dtype == DType::kI8) {
    float scale;
    std::memcpy(&scale, base + layout.scales_offset() + row * 4, 4);
    for (int64_t c = 0; c < w.cols; ++c) out[c] = static_cast<int8_t>(values[c]) * scale;
    return;
  }
  const auto* params =
      reinterpret_cast<const uint16_t*>(base + layout.scales_offset()) + row * layout.groups() * 2;
  for (int64_t c = 0; c < w.cols; ++c) {
    const int64_t g = c / w.group_size;
    out[c] = std::fma(static_cast<float>(Q4Nibble(values, c)), F16ToF32(params[2 * g]),
                      F16ToF32(params[2 * g + 1]));
  }
}

}  // namespace zinf
