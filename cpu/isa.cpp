// CPU feature detection for the kernels, and the ZINF_CPU_ISA cap.
#include "cpu/isa.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/error.h"

namespace zinf::cpu {

CpuIsa BestCpuIsa() {
  static const CpuIsa best = [] {
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
          __builtin_cpu_supports("f16c"))) {
      return CpuIsa::kPortable;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vnni")) {
      return CpuIsa::kAvx512;
    }
    return CpuIsa::kAvx2;
  }();
  return best;
}

namespace {
CpuIsa ParseIsaCap(const std::string& value) {
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (value == CpuIsaName(isa)) return isa;
  }
  Fail("ZINF_CPU_ISA={} is not a kernel level (portable, avx2, avx512)", value);
}
}  // namespace

CpuIsa ActiveCpuIsa() {
  static const CpuIsa active = [] {
    const char* cap = std::getenv("ZINF_CPU_ISA");
    if (cap == nullptr || *cap == '\0') return BestCpuIsa();
    return std::min(BestCpuIsa(), ParseIsaCap(cap));
  }();
  return active;
}

std::string_view CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kPortable: return "portable";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
  }
  return "?";
}

}  // namespace zinf::cpu
