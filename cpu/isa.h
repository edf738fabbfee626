// Which instruction-set level the CPU kernels run at: chosen once from what the CPU supports,
// capped by ZINF_CPU_ISA (portable | avx2 | avx512 | amx) so tests and benchmarks can compare the
// levels.
// Every level computes bit-identical results; only speed differs.
#pragma once

#include <string_view>

namespace zinf::cpu {

enum class CpuIsa { kPortable = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

// The highest level this CPU supports: kAvx2 needs AVX2+FMA+F16C; kAvx512 also needs
// AVX-512 F/BW/VL/DQ and VNNI; kAmx also needs AMX-TILE and AMX-INT8 and the kernel's leave to
// use the tile registers (asked for once, with arch_prctl; refused on kernels before 5.16).
CpuIsa BestCpuIsa();

// BestCpuIsa(), lowered to ZINF_CPU_ISA when that names a lower level (read once). An unknown
// value is an error naming the accepted ones.
CpuIsa ActiveCpuIsa();

std::string_view CpuIsaName(CpuIsa isa);

}  // namespace zinf::cpu
