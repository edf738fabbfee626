// The row loops of RMSNorm for the CPU backend, in portable and AVX2 forms with the same bits:
// the sum of squares in 8 double lanes reduced in ReduceLanes' order, then one scale per row.
#pragma once

#include <cstdint>

#include "cpu/isa.h"
#include "engine/backend.h"

namespace zinf::cpu {

// dst[c] = x[c] · s · weight[c], s = 1 / sqrt(mean(x²) + eps); the mean's sum in double, lane i
// taking c ≡ i mod 8 below the last multiple of 8, the rest added in order. dst may be x.
void RmsNormRow(const float* x, const Weight& weight, float eps, int64_t cols, float* dst,
                CpuIsa isa);

}  // namespace zinf::cpu
