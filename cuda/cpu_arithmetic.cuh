// The CPU backend's f32 operation sequences (cpu/exp.h's Exp, cpu/dot.h's lane reductions) as
// device functions, for kernels that must give the CPU's bits. Every operation is an explicitly
// rounded intrinsic, so nvcc cannot contract a multiply and an add into an fma the CPU never does.
#pragma once

#include <cstdint>

namespace zinf::cuda::kernels {

namespace cpu_exp {
// cpu/exp.h's constants: Cephes' expf, inputs clamped so that 2^n stays a normal float.
constexpr float kLow = -87.0f, kHigh = 88.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
}  // namespace cpu_exp

// cpu::Exp, bit for bit.
__device__ inline float CpuExp(float x) {
  using namespace cpu_exp;
  x = fminf(fmaxf(x, kLow), kHigh);
  const float n = rintf(__fmul_rn(x, kLog2e));
  float r = __fmaf_rn(-n, kLn2High, x);
  r = __fmaf_rn(-n, kLn2Low, r);
  float p = __fmaf_rn(kP0, r, kP1);
  p = __fmaf_rn(p, r, kP2);
  p = __fmaf_rn(p, r, kP3);
  p = __fmaf_rn(p, r, kP4);
  p = __fmaf_rn(p, r, kP5);
  const float y = __fadd_rn(__fmaf_rn(p, __fmul_rn(r, r), r), 1.0f);
  return __fmul_rn(y, __int_as_float((static_cast<int>(n) + 127) << 23));
}

// cpu::ReduceLanes: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
__device__ inline float ReduceLanes(const float lanes[8]) {
  const float s04 = __fadd_rn(lanes[0], lanes[4]), s26 = __fadd_rn(lanes[2], lanes[6]);
  const float s15 = __fadd_rn(lanes[1], lanes[5]), s37 = __fadd_rn(lanes[3], lanes[7]);
  return __fadd_rn(__fadd_rn(s04, s26), __fadd_rn(s15, s37));
}

__device__ inline double ReduceLanes(const double lanes[8]) {
  const double s04 = __dadd_rn(lanes[0], lanes[4]), s26 = __dadd_rn(lanes[2], lanes[6]);
  const double s15 = __dadd_rn(lanes[1], lanes[5]), s37 = __dadd_rn(lanes[3], lanes[7]);
  return __dadd_rn(__dadd_rn(s04, s26), __dadd_rn(s15, s37));
}

}  // namespace zinf::cuda::kernels
