// ThreadPool: workers watch a generation counter, run their part, and count down pending_;
// balanced calls size the parts by each thread's measured speed.
#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <span>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "cpu/read_ahead.h"

namespace zinf::cpu {

namespace {

// How long an idle thread polls before it sleeps: long enough to cover the gap between two
// ParallelFor calls of a step, short enough that an idle pool costs nothing noticeable.
constexpr auto kSpinTime = std::chrono::microseconds(200);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls `value` until it differs from `old` (true) or the spin time is over (false). Between
// polls the thread fetches what its read-ahead plan holds (cpu/read_ahead.h), then pauses.
template <typename T>
bool SpinWhileEqual(const std::atomic<T>& value, T old) {
  ReadAheadPlan& read_ahead = ThisThreadReadAhead();
  while (read_ahead.Step()) {
    if (value.load(std::memory_order_acquire) != old) return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  while (true) {
    for (int j = 0; j < 16; ++j) {
      if (value.load(std::memory_order_acquire) != old) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    // On a machine busier than the pool, the thread being waited for may be queued behind this
    // one: give it the core.
    std::this_thread::yield();
  }
}

// Blocks until `value` differs from `old`: spin first, then sleep in the kernel.
template <typename T>
T WaitWhileEqual(const std::atomic<T>& value, T old) {
  if (!SpinWhileEqual(value, old)) {
    while (value.load(std::memory_order_acquire) == old) value.wait(old, std::memory_order_acquire);
  }
  return value.load(std::memory_order_acquire);
}

// The first index of part `part` when [0, count) is cut into num_parts near-equal parts (count
// for part == num_parts).
int64_t EqualPartBegin(int64_t count, int num_parts, int part) {
  return part * (count / num_parts) + std::min<int64_t>(part, count % num_parts);
}

}  // namespace

ThreadPool::ThreadPool(int num_threads)
    : part_begins_(std::max(num_threads, 1) + 1),
      finish_times_(std::max(num_threads, 1)),
      part_seconds_(std::max(num_threads, 1)),
      balance_(num_threads) {
  const int num_workers = std::max(num_threads, 1) - 1;
  workers_.reserve(num_workers);
  for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RecordError(std::exception_ptr error) {
  std::lock_guard lock(error_mutex_);
  if (!error_) error_ = std::move(error);
}

int ThreadPool::PartsFor(int64_t count, int64_t min_grain) const {
  const int64_t max_parts = std::max<int64_t>(1, count / std::max<int64_t>(min_grain, 1));
  return static_cast<int>(std::min<int64_t>(num_threads(), max_parts));
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t, int64_t)>& body,
                             int64_t min_grain) {
  if (count <= 0) return;
  const int num_parts = PartsFor(count, min_grain);
  if (num_parts == 1) {
    body(0, count);
    return;
  }
  for (int p = 0; p <= num_parts; ++p) part_begins_[p] = EqualPartBegin(count, num_parts, p);
  Run(body, num_parts, false);
}

void ThreadPool::ParallelForBalanced(int64_t count,
                                     const std::function<void(int64_t, int64_t)>& body,
                                     int64_t grain) {
  if (count <= 0) return;
  const int num_parts = PartsFor(count, grain);
  if (num_parts == 1) {
    body(0, count);
    return;
  }
  const std::span<int64_t> begins(part_begins_.data(), num_parts + 1);
  balance_.Split(count, grain, begins);
  const Clock::time_point start = Clock::now();
  Run(body, num_parts, true);
  UpdateSpeeds(start, num_parts);
}

void ThreadPool::UpdateSpeeds(Clock::time_point start, int num_parts) {
  for (int p = 0; p < num_parts; ++p) {
    part_seconds_[p] = std::chrono::duration<double>(finish_times_[p].at - start).count();
  }
  balance_.Record(std::span<const int64_t>(part_begins_.data(), num_parts + 1),
                  std::span<const double>(part_seconds_.data(), num_parts));
}

void ThreadPool::Run(const std::function<void(int64_t, int64_t)>& body, int num_parts, bool timed) {
  body_ = &body;
  num_parts_ = num_parts;
  timed_ = timed;
  error_ = nullptr;
  // Every worker sees every generation (those beyond num_parts_ just acknowledge it), so the
  // caller knows when none of them still reads body_.
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  std::exception_ptr caller_error;
  try {
    if (part_begins_[0] < part_begins_[1]) body(part_begins_[0], part_begins_[1]);
  } catch (...) {
    caller_error = std::current_exception();
  }
  if (timed) finish_times_[0].at = Clock::now();
  for (int left = pending_.load(std::memory_order_acquire); left != 0;) {
    left = WaitWhileEqual(pending_, left);
  }
  body_ = nullptr;
  if (caller_error) std::rethrow_exception(caller_error);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::WorkerLoop(int worker_idx) {
  uint64_t seen_generation = 0;
  while (true) {
    seen_generation = WaitWhileEqual(generation_, seen_generation);
    if (stopping_.load(std::memory_order_acquire)) return;
    if (worker_idx < num_parts_) {
      const int64_t begin = part_begins_[worker_idx];
      const int64_t end = part_begins_[worker_idx + 1];
      try {
        if (begin < end) (*body_)(begin, end);
      } catch (...) {
        RecordError(std::current_exception());
      }
      if (timed_) finish_times_[worker_idx].at = Clock::now();
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace zinf::cpu
