// SiLU-gated product of the feed-forward block, out = silu(gate) · up, in portable, AVX2 and
// AVX-512 forms with the same bits (cpu_exp.h).
#pragma once

#include <cstdint>

#include "cpu/isa.h"

namespace zinf::cpu {

// dst[i] = gate[i] / (1 + exp(-gate[i])) · up[i] for i in [0, n).
void SiluMulRange(const float* gate, const float* up, float* dst, int64_t n, CpuIsa isa);

}  // namespace zinf::cpu
