// Scalar dtype conversions. F16 uses the F16C instructions when the compiler targets them.
#include "engine/dtype.h"

#include <cmath>

#include "engine/error.h"

namespace zinf {

std::optional<DType> ParseDType(std::string_view name) {
  if (name == "f32") return DType::kF32;
  if (name == "f16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  if (name == "int8") return DType::kI8;
  if (name == "int4") return DType::kQ4;
  return std::nullopt;
}

float F16ToF32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t word;
  if (exponent == 0) {
    if (mantissa == 0) {
      word = sign;
    } else {  // subnormal: renormalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      word = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 31) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else {
    word = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

uint16_t F32ToF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000u);
  const uint32_t abs_word = word & 0x7fffffffu;
  if (abs_word > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs_word >= 0x477ff000u) return sign | 0x7c00u;  // overflow to inf (incl. inf)
  if (abs_word < 0x38800000u) {                        // subnormal or zero in f16
    float abs_value;
    std::memcpy(&abs_value, &abs_word, 4);
    // 2^-24 is the smallest f16 subnormal; nearbyint rounds half to even.
    return sign | static_cast<uint16_t>(std::nearbyint(abs_value * 16777216.0f));
  }
  // Normal: rebias exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t rounded = abs_word + 0xfffu + ((abs_word >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
}

void ConvertToF32(DType dtype, const void* src, float* dst, size_t count) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, count * 4); return;
    case DType::kF16: {
      const auto* bits = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = F16ToF32(bits[i]);
      return;
    }
    case DType::kBF16: {
      const auto* bits = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = Bf16ToF32(bits[i]);
      return;
    }
    case DType::kI8:
    case DType::kQ4: break;  // quantized encodings are whole rows, not elements: engine/quantized.h
  }
  Fail("{}: {} is not a float dtype", "ConvertToF32", DTypeName(dtype));
}

void ConvertFromF32(DType dtype, const float* src, void* dst, size_t count) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, count * 4); return;
    case DType::kF16: {
      auto* bits = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) bits[i] = F32ToF16(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* bits = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) bits[i] = F32ToBf16(src[i]);
      return;
    }
    case DType::kI8:
    case DType::kQ4: break;  // quantized encodings are whole rows, not elements: engine/quantized.h
  }
  Fail("{}: {} is not a float dtype", "ConvertFromF32", DTypeName(dtype));
}

}  // namespace zinf
