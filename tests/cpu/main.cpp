// Runner for the CPU tests. CTest runs the [avx2], [avx512] and [amx] tests as entries of their own with
// ZINF_TEST_REQUIRES_ISA naming the level; on a CPU without it they exit 77, reported as skipped.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "cpu/isa.h"
#include "tests/catch_runner.h"

int main(int argc, char* argv[]) {
  using zinf::cpu::CpuIsa;
  const char* required = std::getenv("ZINF_TEST_REQUIRES_ISA");
  if (required != nullptr && *required != '\0') {
    const CpuIsa levels[] = {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAmx};
    const CpuIsa* level = nullptr;
    for (const CpuIsa& isa : levels) {
      if (zinf::cpu::CpuIsaName(isa) == std::string_view(required)) level = &isa;
    }
    if (level == nullptr) {  // a typo must not turn into a skip
      std::fprintf(stderr, "ZINF_TEST_REQUIRES_ISA=%s is not avx2, avx512 or amx\n", required);
      return 2;
    }
    if (zinf::cpu::BestCpuIsa() < *level) {
      std::printf("skipped: this CPU lacks %s, which these tests check\n", required);
      return 77;
    }
  }
  return zinf::testing::RunCatchSession(argc, argv);
}
