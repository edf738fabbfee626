// The main of the test executables that need no check before their tests run.
#include "tests/catch_runner.h"

int main(int argc, char* argv[]) { return zinf::testing::RunCatchSession(argc, argv); }
