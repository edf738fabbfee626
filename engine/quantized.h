// The quantized matrix encodings: int8 with one scale per output row (symmetric) and int4 in
// groups along a row with a scale and a minimum each (asymmetric). Byte layout, quantization of
// f32 rows at conversion time, and dequantization for the reference paths (docs/quantization.md).
#pragma once

#include <cstdint>
#include <span>

#include "engine/backend.h"
#include "engine/dtype.h"

namespace zinf {

// int4 nibbles are packed in blocks of 32 elements: byte j of a block holds element j in its low
// nibble and element j + 16 in its high nibble, so one 16-byte load unpacks to two runs of 16.
inline constexpr int kQ4BlockElements = 32;
inline constexpr int kQ4GroupSizes[] = {32, 64, 128};

// Where the parts of one quantized [rows, cols] tensor lie within its bytes:
//   int8: int8 values [rows][cols], then at scales_offset f32 scales [rows];
//   int4: packed nibbles [rows][row_bytes], then at scales_offset {f16 scale, f16 min}
//         [rows][groups]. A row is padded with zero nibbles to groups × group_size elements, so a
//         width that is not a multiple of the group (stories260K's 172) keeps a partial last group.
struct QuantLayout {
  DType dtype = DType::kI8;
  int64_t rows = 0;
  int64_t cols = 0;
  int group_size = 0;

  int64_t groups() const;     // int4: groups per row; int8: 1
  int64_t row_bytes() const;  // bytes of one row's values
  uint64_t scales_offset() const;
  uint64_t total_bytes() const;
};

QuantLayout LayoutOf(DType dtype, int64_t rows, int64_t cols, int group_size);

// Bytes a [rows, cols] tensor (cols elements for a vector, rows = 1) takes in `dtype`.
uint64_t TensorBytes(DType dtype, int64_t rows, int64_t cols, int group_size);

// True for the group sizes int4 supports (32, 64, 128).
bool IsValidGroupSize(int group_size);

// Quantizes one row of `cols` values. int8: values[cols], *scale. int4: nibbles[row_bytes],
// params[2 × groups] as f16 bits {scale, min} per group.
void QuantizeRowI8(const float* row, int64_t cols, int8_t* values, float* scale);
void QuantizeRowQ4(const float* row, int64_t cols, int group_size, uint8_t* nibbles,
                   uint16_t* params);

// Row `row` of any weight (float or quantized) as f32 values, out[w.cols].
void DequantizeRow(const Weight& w, int64_t row, float* out);

// Element idx (row-major) of a quantized weight, dequantized; for the few scalar uses.
float QuantizedValue(const Weight& w, int64_t idx);

// Unsigned nibble of element `col` of an int4 row.
inline int Q4Nibble(const uint8_t* row_nibbles, int64_t col) {
  const int64_t block = col / kQ4BlockElements;
  const int64_t in_block = col % kQ4BlockElements;
  const uint8_t byte = row_nibbles[block * 16 + (in_block % 16)];
  return in_block < 16 ? (byte & 0x0f) : (byte >> 4);
}

}  // namespace zinf
