// Catch2's implementation lives in this one translation unit: compiling it takes half a minute,
// which every test executable with a main of its own used to pay again.
#define CATCH_CONFIG_RUNNER
#include "tests/catch_runner.h"

#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>

namespace zinf::testing {

int RunCatchSession(int argc, char* argv[]) {
  spdlog::set_level(spdlog::level::warn);
  return Catch::Session().run(argc, argv);
}

}  // namespace zinf::testing
