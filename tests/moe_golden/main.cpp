// Runner for the mixture-of-experts golden tests: they need ../shared/models/tiny-moe (reference
// data beside the repository); without it the executable exits 77 and CTest reports them skipped.
#define CATCH_CONFIG_RUNNER
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char* argv[]) {
  const std::string shared = std::string(ZINF_SOURCE_DIR) + "/../shared/models/tiny-moe";
  if (!std::filesystem::exists(shared)) {
    std::printf("skipped: the mixture-of-experts reference data %s is not present\n",
                shared.c_str());
    return 77;
  }
  spdlog::set_level(spdlog::level::warn);
  return Catch::Session().run(argc, argv);
}
