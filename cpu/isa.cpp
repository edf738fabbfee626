// CPU feature detection for the kernels, and the ZINF_CPU_ISA cap.
#include "cpu/isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/error.h"

namespace zinf::cpu {

namespace {

// Linux keeps the AMX tile state off until a process asks for it (arch/x86/include/uapi/asm/prctl.h).
constexpr long kArchRequestXcompPermission = 0x1023;
constexpr long kXfeatureTileData = 18;

// CPUID leaf 7's EDX: AMX-TILE (bit 24) and AMX-INT8 (bit 25). GCC 12's __builtin_cpu_supports
// does not report AMX.
bool AmxUsable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((edx & (1u << 24)) == 0 || (edx & (1u << 25)) == 0) return false;
  return syscall(SYS_arch_prctl, kArchRequestXcompPermission, kXfeatureTileData) == 0;
}

}  // namespace

CpuIsa BestCpuIsa() {
  static const CpuIsa best = [] {
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
          __builtin_cpu_supports("f16c"))) {
      return CpuIsa::kPortable;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vnni")) {
      return AmxUsable() ? CpuIsa::kAmx : CpuIsa::kAvx512;
    }
    return CpuIsa::kAvx2;
  }();
  return best;
}

namespace {
CpuIsa ParseIsaCap(const std::string& value) {
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAmx}) {
    if (value == CpuIsaName(isa)) return isa;
  }
  Fail("ZINF_CPU_ISA={} is not a kernel level (portable, avx2, avx512, amx)", value);
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
    case CpuIsa::kAmx: return "amx";
  }
  return "?";
}

}  // namespace zinf::cpu
