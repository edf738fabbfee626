// Ctrl-C (SIGINT) and SIGTERM as a flag the generation loop polls between steps, so a stop keeps
// every finished output and never tears one.
#pragma once

#include <atomic>

namespace zinf::cli {

// Installs the handlers (a second signal kills the process the usual way) and returns the flag.
const std::atomic<bool>* InstallInterruptFlag();

}  // namespace zinf::cli
