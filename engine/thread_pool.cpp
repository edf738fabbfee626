// ThreadPool: workers wait for a generation counter to move, run their part, and report back.
#include "engine/thread_pool.h"

#include <algorithm>

namespace zinf {

namespace {
std::pair<int64_t, int64_t> PartRange(int64_t count, int num_parts, int part) {
  const int64_t base = count / num_parts;
  const int64_t extra = count % num_parts;
  const int64_t begin = part * base + std::min<int64_t>(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  const int num_workers = std::max(num_threads, 1) - 1;
  workers_.reserve(num_workers);
  for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t, int64_t)>& body,
                             int64_t min_grain) {
  if (count <= 0) return;
  const int64_t max_parts = std::max<int64_t>(1, count / std::max<int64_t>(min_grain, 1));
  const int num_parts = static_cast<int>(std::min<int64_t>(num_threads(), max_parts));
  if (num_parts == 1) {
    body(0, count);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    count_ = count;
    num_parts_ = num_parts;
    pending_ = num_parts - 1;
    error_ = nullptr;
    ++generation_;
  }
  work_ready_.notify_all();
  std::exception_ptr caller_error;
  try {
    const auto [begin, end] = PartRange(count, num_parts, 0);
    body(begin, end);
  } catch (...) {
    caller_error = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  work_done_.wait(lock, [this] { return pending_ == 0; });
  body_ = nullptr;
  if (caller_error) std::rethrow_exception(caller_error);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::WorkerLoop(int worker_idx) {
  uint64_t seen_generation = 0;
  while (true) {
    std::unique_lock lock(mutex_);
    work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
    if (stopping_) return;
    seen_generation = generation_;
    if (worker_idx >= num_parts_) continue;
    const auto* body = body_;
    const auto [begin, end] = PartRange(count_, num_parts_, worker_idx);
    lock.unlock();
    std::exception_ptr error;
    try {
      (*body)(begin, end);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    if (--pending_ == 0) work_done_.notify_one();
  }
}

}  // namespace zinf
