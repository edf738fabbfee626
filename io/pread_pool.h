// A few threads that run pread for ExtentReader when io_uring is refused or not wanted: the same
// submit-now, reap-later shape as a ring, so several chunk reads are in flight at once.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zinf::io {

struct PreadRequest {
  int fd = -1;
  std::byte* dest = nullptr;
  uint64_t length = 0;
  uint64_t file_offset = 0;
  void* user_data = nullptr;  // handed back in the completion
};

struct PreadCompletion {
  void* user_data = nullptr;
  int64_t result = 0;  // bytes read, or -errno: what an io_uring completion's res would hold
};

// The read each worker performs; ::pread outside tests. Returns what pread returns, with errno.
using PreadFunction = std::function<ssize_t(int fd, void* dest, size_t length, off_t offset)>;

// Each request is one read attempt, never retried here: like a ring, the pool reports -EINTR,
// -EAGAIN and short counts as they come and leaves the recovery to the reader, so the io_uring and
// pread paths share one recovery code (and one fault hook).
// Thread-safe: the reader submits from its caller's thread and reaps on its completion thread.
// Workers block asynchronous signals (background_thread.h). When no thread can be started (a
// thread limit), Submit reads on the caller's thread and the pool still works.
// The destructor lets workers finish the read each is doing, drops queued requests and joins:
// the caller drains first, since a worker writes into its buffer until that read is reaped.
class PreadPool {
 public:
  explicit PreadPool(unsigned num_threads, PreadFunction read = {});
  ~PreadPool();
  PreadPool(const PreadPool&) = delete;
  PreadPool& operator=(const PreadPool&) = delete;

  void Submit(const PreadRequest& request);
  // Blocks until a submitted read has finished and returns it (completion order, not submission
  // order); with nothing submitted, until something is. A request with length 0 and no user_data
  // is how a reaper can be woken to stop.
  PreadCompletion WaitOne();

  unsigned num_threads() const { return static_cast<unsigned>(workers_.size()); }

 private:
  PreadCompletion Read(const PreadRequest& request) const;
  void WorkerLoop();

  PreadFunction read_;
  std::mutex mutex_;
  std::condition_variable request_ready_;
  std::condition_variable completion_ready_;
  std::deque<PreadRequest> requests_;
  std::deque<PreadCompletion> completions_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // last: started once everything above exists
};

}  // namespace zinf::io
