// cpu::ThreadPool: every index runs exactly once in fixed contiguous parts, errors reach the caller,
// and the spin-then-sleep hand-off survives back-to-back calls, idle gaps longer than the spin
// and destruction while workers sleep (TSan runs this file in CI).
#include <catch2/catch.hpp>

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
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(100, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    CHECK(sum == 4950);
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
