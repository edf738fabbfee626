// StartBackgroundThread: block, create (the thread inherits the mask), restore.
#include "io/background_thread.h"

#include <pthread.h>

#include <csignal>

namespace zinf::io {

std::thread StartBackgroundThread(std::function<void()> body) {
  sigset_t blocked;
  sigfillset(&blocked);
  for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) {
    sigdelset(&blocked, synchronous);
  }
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  struct RestoreMask {
    const sigset_t* mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, mask, nullptr); }
  } restore{&previous};
  return std::thread(std::move(body));
}

}  // namespace zinf::io
