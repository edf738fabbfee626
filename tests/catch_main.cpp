// The one Catch2 main shared by every test executable; engine logs are kept to warnings so test
// output shows what failed.
#define CATCH_CONFIG_RUNNER
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  spdlog::set_level(spdlog::level::warn);
  return Catch::Session().run(argc, argv);
}
