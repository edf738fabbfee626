// cpu::ThreadPool: every index runs exactly once in fixed contiguous parts, errors reach the caller,
// and the spin-then-sleep hand-off survives back-to-back calls, idle gaps longer than the spin
// and destruction while workers sleep (TSan runs this file in CI); balanced calls cover every index
// once on grain boundaries and give a slowed thread less.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/thread_pool.h"

namespace zinf {

TEST_CASE("thread pool: every index exactly once, in one contiguous part per thread") {
  for (int threads : {1, 2, 3, 4}) {
    cpu::ThreadPool pool(threads);
    for (int64_t count : {1, 2, 7, 64, 1000}) {
      for (int64_t grain : {1, 16}) {
        std::vector<std::atomic<int>> hits(count);
        std::atomic<int> parts{0};
        pool.ParallelFor(
            count,
            [&](int64_t begin, int64_t end) {
              ++parts;
              for (int64_t i = begin; i < end; ++i) ++hits[i];
            },
            grain);
        INFO(threads << " threads, count " << count << ", grain " << grain);
        for (int64_t i = 0; i < count; ++i) CHECK(hits[i] == 1);
        CHECK(parts <= threads);
        CHECK(parts <= std::max<int64_t>(1, count / grain));
      }
    }
  }
}

TEST_CASE("thread pool: balanced parts cover every index once, starting on grain multiples") {
  for (int threads : {1, 2, 3, 4}) {
    cpu::ThreadPool pool(threads);
    for (int call = 0; call < 50; ++call) {  // the split moves with the measured speeds
      for (int64_t count : {1, 15, 16, 17, 40, 48, 100, 1000}) {
        for (int64_t grain : {1, 16}) {
          std::vector<std::atomic<int>> hits(count);
          std::atomic<int> parts{0};
          std::atomic<int> off_grain{0};
          pool.ParallelForBalanced(
              count,
              [&](int64_t begin, int64_t end) {
                ++parts;
                off_grain += begin % grain != 0;
                for (int64_t i = begin; i < end; ++i) ++hits[i];
              },
              grain);
          INFO(threads << " threads, count " << count << ", grain " << grain << ", call " << call);
          for (int64_t i = 0; i < count; ++i) REQUIRE(hits[i] == 1);
          CHECK(parts <= threads);
          CHECK(off_grain == 0);
        }
      }
    }
  }
}

TEST_CASE("thread pool: a thread that runs slower gets a smaller balanced part") {
  // The worker spends three times as long per index as the caller: its part should move towards a
  // quarter, where both finish together. (A worker that wakes late looks slow too, so a busy
  // machine pushes the same way.)
  cpu::ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  auto spin_for = [](std::chrono::nanoseconds duration) {
    const auto until = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  constexpr int64_t kCount = 1024;
  // The worker's part in each of 100 calls; the median of the last 30 is checked, so that a few
  // calls where the caller lost its core for a time slice do not decide. (The way back to even
  // parts is tested on cpu::PartBalance with set timings: with real ones a busy test machine makes
  // the worker late.)
  std::vector<int64_t> worker_parts;
  for (int call = 0; call < 100; ++call) {
    int64_t worker_indices = 0;
    pool.ParallelForBalanced(
        kCount,
        [&](int64_t begin, int64_t end) {
          const bool on_worker = std::this_thread::get_id() != caller;
          if (on_worker) worker_indices = end - begin;
          spin_for(std::chrono::nanoseconds((end - begin) * (on_worker ? 1200 : 400)));
        },
        16);
    worker_parts.push_back(worker_indices);
  }
  std::vector<int64_t> last(worker_parts.end() - 30, worker_parts.end());
  std::nth_element(last.begin(), last.begin() + 15, last.end());
  INFO("the worker's median part over the last 30 of 100 calls at a third of the caller's speed: "
       << last[15] << " of " << kCount);
  CHECK(last[15] < kCount * 4 / 10);
}

TEST_CASE("thread pool: an exception in any part reaches the caller, and the pool goes on") {
  cpu::ThreadPool pool(3);
  for (int64_t failing : {0, 50, 99}) {  // the caller's part, a worker's, the last worker's
    INFO("index " << failing << " throws");
    CHECK_THROWS_WITH(pool.ParallelFor(100,
                                       [&](int64_t begin, int64_t end) {
                                         if (failing >= begin && failing < end) {
                                           throw std::runtime_error("part failed");
                                         }
                                       }),
                      "part failed");
    CHECK_THROWS_WITH(pool.ParallelForBalanced(100,
                                               [&](int64_t begin, int64_t end) {
                                                 if (failing >= begin && failing < end) {
                                                   throw std::runtime_error("part failed");
                                                 }
                                               }),
                      "part failed");
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(100, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    pool.ParallelForBalanced(100, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    CHECK(sum == 2 * 4950);
  }
}

TEST_CASE("thread pool: back-to-back calls, idle gaps past the spin, destruction while asleep") {
  cpu::ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  for (int call = 0; call < 20000; ++call) {  // the spinning hand-off, many times
    pool.ParallelFor(4, [&](int64_t begin, int64_t end) { total += end - begin; });
  }
  CHECK(total == 80000);
  for (int call = 0; call < 3; ++call) {  // workers asleep in the kernel by now: woken by a call
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pool.ParallelFor(4, [&](int64_t begin, int64_t end) { total += end - begin; });
  }
  CHECK(total == 80012);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // ~cpu::ThreadPool wakes them to stop
}

}  // namespace zinf
