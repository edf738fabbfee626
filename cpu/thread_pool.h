// A fixed pool of worker threads for data-parallel loops in the CPU backend.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zinf::cpu {

// Runs a loop body over [0, count) split into one contiguous range per thread, the caller's thread
// taking the first. The split depends only on count and the thread count, so results that depend
// on it are deterministic. ParallelFor is called from one thread at a time; an exception in a
// worker is rethrown on the calling thread.
//
// A decode step calls ParallelFor over a hundred times, each for tens of microseconds of work, so
// waking a sleeping thread (a futex round trip, often more when the scheduler is slow) would cost
// as much as the work: idle workers and the waiting caller spin for a short while before they
// sleep.
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
  void RecordError(std::exception_ptr error);

  std::vector<std::thread> workers_;
  // A task is published by writing these, then bumping generation_ (release).
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t count_ = 0;
  int num_parts_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers still running the current task
  std::atomic<bool> stopping_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace zinf::cpu
