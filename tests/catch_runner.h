// Catch2's session, compiled once (catch_runner.cpp) for every test executable: the shared main
// and the runners that first decide whether their tests can run here (exit 77: skipped).
#pragma once

namespace zinf::testing {

// Runs the test cases `argc`/`argv` select, engine logs kept to warnings so that test output shows
// what failed; returns the executable's exit code.
int RunCatchSession(int argc, char* argv[]);

}  // namespace zinf::testing
