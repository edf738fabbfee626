// zinf --version; the build facts come from cmake/version.cmake as definitions on this file only,
// so a new commit recompiles one file.
#include "cmd/version.h"

#include <fmt/format.h>

#include <cstdlib>

#include "cpu/isa.h"
#include "cuda/cuda_backend.h"

#ifndef ZINF_VERSION
#define ZINF_VERSION "unknown"
#endif
#ifndef ZINF_BUILD_TYPE
#define ZINF_BUILD_TYPE "unknown"
#endif
#ifndef ZINF_GIT_COMMIT
#define ZINF_GIT_COMMIT ""
#endif

namespace zinf::cli {

namespace {

// The level the kernels run at, and why when it is below what the CPU has (ZINF_CPU_ISA).
std::string IsaLine() {
  const cpu::CpuIsa best = cpu::BestCpuIsa();
  try {
    const cpu::CpuIsa active = cpu::ActiveCpuIsa();
    if (active == best)
      return fmt::format("{} (the best this CPU supports)", cpu::CpuIsaName(best));
    return fmt::format("{} (capped by ZINF_CPU_ISA; this CPU supports {})", cpu::CpuIsaName(active),
                       cpu::CpuIsaName(best));
  } catch (const std::exception& error) {  // a bad ZINF_CPU_ISA: say so rather than fail --version
    return fmt::format("{} ({})", cpu::CpuIsaName(best), error.what());
  }
}

std::string BuildLine() {
  const std::string commit = ZINF_GIT_COMMIT;
  return fmt::format("{}, git commit {}", ZINF_BUILD_TYPE, commit.empty() ? "unknown" : commit);
}

std::string CudaLine() {
  return cuda::CudaBuilt() ? "compiled in (--device cuda)"
                           : "not compiled in (configure with nvcc to get --device cuda)";
}

}  // namespace

std::string VersionText() {
  return fmt::format("zinf {}\n"
                     "build:   {}\n"
                     "cpu isa: {}\n"
                     "cuda:    {}",
                     ZINF_VERSION, BuildLine(), IsaLine(), CudaLine());
}

std::string VersionLine() {
  return fmt::format("zinf {} ({}), cpu isa {}, cuda {}", ZINF_VERSION, BuildLine(), IsaLine(),
                     CudaLine());
}

}  // namespace zinf::cli
