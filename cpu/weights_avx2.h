// Eight weights of an f32, f16 or bf16 vector as floats in one AVX2 register, converted exactly as
// WeightValue converts one (F16C for f16, a 16-bit shift for bf16): the float kernels' rows and
// RMSNorm's weights.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/dtype.h"

namespace zinf::cpu {

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Elements [idx, idx + 8) of the vector at base.
template <DType kDType>
inline __m256 LoadWeights8(const void* base, int64_t idx) {
  if constexpr (kDType == DType::kF32) {
    return _mm256_loadu_ps(static_cast<const float*>(base) + idx);
  } else if constexpr (kDType == DType::kF16) {
    const auto* p = static_cast<const uint16_t*>(base) + idx;
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    const auto* p = static_cast<const uint16_t*>(base) + idx;
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
}

#pragma GCC pop_options

}  // namespace zinf::cpu
