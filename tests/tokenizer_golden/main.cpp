// Runner for the tokenizer golden tests: they need ../shared/tokenizers (reference data beside the
// repository); without it the executable exits 77 and CTest reports the tests skipped.
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/catch_runner.h"

int main(int argc, char* argv[]) {
  const std::string shared = std::string(ZINF_SOURCE_DIR) + "/../shared/tokenizers";
  if (!std::filesystem::exists(shared)) {
    std::printf("skipped: the tokenizer reference data %s is not present\n", shared.c_str());
    return 77;
  }
  return zinf::testing::RunCatchSession(argc, argv);
}
