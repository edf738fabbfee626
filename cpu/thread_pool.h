// A fixed pool of worker threads for data-parallel loops in the CPU backend.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu/part_balance.h"

namespace zinf::cpu {

// Runs a loop body over [0, count) split into one contiguous range per thread, the caller's thread
// taking the first. The split depends only on count and the thread count, so results that depend
// on it are deterministic. ParallelFor is called from one thread at a time; an exception in a
// worker is rethrown on the calling thread.
//
// A decode step calls ParallelFor over a hundred times, each for tens of microseconds of work, so
// waking a sleeping thread (a futex round trip, often more when the scheduler is slow) would cost
// as much as the work: idle workers and the waiting caller spin for a short while before they
// sleep. While they spin they first fetch what their read-ahead plan holds (cpu/read_ahead.h).
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

  // Like ParallelFor, for loops whose results do not depend on where [0, count) is split: each
  // thread's part is sized by how fast that thread finished its parts in earlier balanced calls,
  // so that a thread the machine slows down (a vCPU whose host core is busy, a noisy sibling
  // hyperthread) does not keep the others waiting at the end of every call. Parts start at
  // multiples of grain.
  void ParallelForBalanced(int64_t count, const std::function<void(int64_t, int64_t)>& body,
                           int64_t grain = 1);

 private:
  using Clock = std::chrono::steady_clock;
  // A thread's finish time, alone on its cache line: the threads write theirs at the same moment.
  struct alignas(64) FinishTime {
    Clock::time_point at;
  };

  int PartsFor(int64_t count, int64_t min_grain) const;
  // Runs body over the parts in part_begins_[0..num_parts]; with `timed`, each thread records
  // when its part ended.
  void Run(const std::function<void(int64_t, int64_t)>& body, int num_parts, bool timed);
  void UpdateSpeeds(Clock::time_point start, int num_parts);
  void WorkerLoop(int worker_idx);
  void RecordError(std::exception_ptr error);

  std::vector<std::thread> workers_;
  // A task is published by writing these, then bumping generation_ (release).
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  std::vector<int64_t> part_begins_;  // part p is [part_begins_[p], part_begins_[p + 1])
  int num_parts_ = 0;
  bool timed_ = false;
  std::vector<FinishTime> finish_times_;
  // Only the calling thread uses these.
  std::vector<double> part_seconds_;
  PartBalance balance_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers still running the current task
  std::atomic<bool> stopping_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace zinf::cpu
