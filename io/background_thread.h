// Starts the io module's helper threads (pread workers, the reader's completion thread) with the
// process's asynchronous signals blocked, so Ctrl-C and friends land on the threads that run zinf.
#pragma once

#include <functional>
#include <thread>

namespace zinf::io {

// Like std::thread(body), with every signal blocked except those a thread raises on itself by
// faulting (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS), which sanitizers and crash
// handlers must still see. The mask is set before the thread starts, so no signal can slip in
// between. Throws std::system_error when the thread cannot be created, as std::thread does.
std::thread StartBackgroundThread(std::function<void()> body);

}  // namespace zinf::io
