// The signal handler only stores to a lock-free atomic, which is async-signal-safe.
#include "cmd/interrupt.h"

#include <csignal>

namespace zinf::cli {

namespace {
std::atomic<bool> g_interrupted{false};

extern "C" void OnInterrupt(int signal_number) {
  g_interrupted.store(true);
  std::signal(signal_number, SIG_DFL);  // a second Ctrl-C ends the process at once
}
}  // namespace

const std::atomic<bool>* InstallInterruptFlag() {
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  return &g_interrupted;
}

}  // namespace zinf::cli
