// Runner for the mixture-of-experts golden tests: they need ../shared/models/tiny-moe (reference
// data beside the repository); without it the executable exits 77 and CTest reports them skipped.
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/catch_runner.h"

int main(int argc, char* argv[]) {
  const std::string shared = std::string(ZINF_SOURCE_DIR) + "/../shared/models/tiny-moe";
  if (!std::filesystem::exists(shared)) {
    std::printf("skipped: the mixture-of-experts reference data %s is not present\n",
                shared.c_str());
    return 77;
  }
  return zinf::testing::RunCatchSession(argc, argv);
}
