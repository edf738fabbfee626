// A fixed pool of worker threads for data-parallel loops in the CPU backend.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zinf {

// Runs a loop body over [0, count) split into one contiguous range per thread, the caller's thread
// taking the first. The split depends only on count and the thread count, so results that depend
// on it are deterministic. ParallelFor is called from one thread at a time; an exception in a
// worker is rethrown on the calling thread.
class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // body(begin, end) over contiguous sub-ranges; ranges smaller than min_grain are not split.
  void ParallelFor(int64_t count, const std::function<void(int64_t, int64_t)>& body,
                   int64_t min_grain = 1);

 private:
  void WorkerLoop(int worker_idx);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t count_ = 0;
  int num_parts_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
};

}  // namespace zinf
