// Element types of stored tensors and the conversions between them.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace zinf {

// kI8 and kQ4 are quantized matrix encodings (engine/quantized.h): only 2-D weights use them.
enum class DType : uint8_t { kF32, kF16, kBF16, kI8, kQ4 };

constexpr bool IsQuantized(DType dtype) { return dtype == DType::kI8 || dtype == DType::kQ4; }

// Bytes per element of the float dtypes and int8; int4 packs two per byte plus group parameters,
// so its sizes come from engine/quantized.h's QuantLayout (0 here).
constexpr size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kI8: return 1;
    case DType::kQ4: return 0;
  }
  return 0;
}

constexpr std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI8: return "int8";
    case DType::kQ4: return "int4";
  }
  return "?";
}

// Accepts zinf's names ("f32", "f16", "bf16", "int8", "int4").
std::optional<DType> ParseDType(std::string_view name);

inline float Bf16ToF32(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

// Round to nearest even, as PyTorch does; NaN stays NaN.
inline uint16_t F32ToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  if ((word & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((word >> 16) | 0x40);
  word += 0x7fffu + ((word >> 16) & 1u);
  return static_cast<uint16_t>(word >> 16);
}

float F16ToF32(uint16_t bits);
uint16_t F32ToF16(float value);

// Converts `count` elements stored as float `dtype` at `src` to f32.
void ConvertToF32(DType dtype, const void* src, float* dst, size_t count);
// Converts `count` f32 values to float `dtype` at `dst`.
void ConvertFromF32(DType dtype, const float* src, void* dst, size_t count);

}  // namespace zinf
