// The CUDA tests' main: without a usable GPU it prints why and exits 77, which CTest reports as
// skipped (never as passed); with one it runs every test case.
#include <cstdio>

#include "cuda/cuda_backend.h"
#include "tests/catch_runner.h"

int main(int argc, char* argv[]) {
  const std::string reason = zinf::cuda::CudaUnavailableReason();
  if (!reason.empty()) {
    std::printf("skipped: the CUDA tests need a GPU: %s\n", reason.c_str());
    return 77;
  }
  return zinf::testing::RunCatchSession(argc, argv);
}
