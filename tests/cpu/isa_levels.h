// The guard of the [avx2] and [avx512] tests. CTest runs each tag as an entry of its own that
// exits 77 (skipped) on a CPU without the level (main.cpp), so a test reaching here without it
// was run by hand: it fails rather than passing without checking anything.
#pragma once

#include <catch2/catch.hpp>

#include "cpu/isa.h"

namespace zinf::testing {

inline void RequireCpuIsa(cpu::CpuIsa isa) {
  if (cpu::BestCpuIsa() < isa) {
    FAIL("this CPU lacks " << cpu::CpuIsaName(isa) << "; CTest reports this test as skipped");
  }
}

}  // namespace zinf::testing
