#include "cpu/silu.h"

#include <immintrin.h>

#include <cstdint>

#include "cpu/exp.h"

namespace zinf::cpu {

namespace {

inline float SiluMulOne(float gate, float up) { return gate / (1.0f + Exp(-gate)) * up; }

__attribute__((target("avx2,fma"))) int64_t SiluMulAvx2(const float* gate, const float* up,
                                                        float* dst, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = Exp8(_mm256_xor_ps(g, sign));
    _mm256_storeu_ps(
        dst + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  return i;
}

__attribute__((target("avx512f,avx2,fma"))) int64_t SiluMulAvx512(const float* gate,
                                                                  const float* up, float* dst,
                                                                  int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i sign = _mm512_set1_epi32(INT32_MIN);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = Exp16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g), sign)));
    _mm512_storeu_ps(
        dst + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
  }
  return i;
}

}  // namespace

void SiluMulRange(const float* gate, const float* up, float* dst, int64_t n, CpuIsa isa) {
  int64_t done = 0;
  if (isa >= CpuIsa::kAvx512) {
    done = SiluMulAvx512(gate, up, dst, n);
  } else if (isa >= CpuIsa::kAvx2) {
    done = SiluMulAvx2(gate, up, dst, n);
  }
  for (int64_t i = done; i < n; ++i) dst[i] = SiluMulOne(gate[i], up[i]);
}

}  // namespace zinf::cpu
