// PreadPool: reads really overlap, results come back as io_uring would report them, no threads is
// still a working pool.
#include "io/pread_pool.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "engine/error.h"
#include "tests/io/synthetic_weights.h"

namespace zinf::io {
namespace {

using namespace std::chrono_literals;

TEST_CASE("PreadPool keeps as many reads in flight as it has threads", "[io]") {
  constexpr unsigned kThreads = 4;
  std::mutex mutex;
  std::condition_variable all_inside;
  unsigned inside = 0;
  unsigned most_inside = 0;
  // Each read waits until every thread is inside one: possible only if they overlap. A serial pool
  // would time out and report at most one read at once.
  PreadPool pool(kThreads, [&](int, void*, size_t length, off_t) -> ssize_t {
    std::unique_lock<std::mutex> lock(mutex);
    most_inside = std::max(most_inside, ++inside);
    all_inside.notify_all();
    all_inside.wait_for(lock, 10s, [&] { return inside == kThreads; });
    return static_cast<ssize_t>(length);
  });
  REQUIRE(pool.num_threads() == kThreads);
  int tags[kThreads] = {};
  for (unsigned idx = 0; idx < kThreads; ++idx) {
    pool.Submit({/*fd=*/3, nullptr, 1000 + idx, 4096 * idx, &tags[idx]});
  }
  std::set<void*> seen;
  for (unsigned idx = 0; idx < kThreads; ++idx) {
    const PreadCompletion completion = pool.WaitOne();
    const auto tag = static_cast<int*>(completion.user_data);
    CHECK(completion.result == 1000 + (tag - tags));
    seen.insert(completion.user_data);
  }
  CHECK(seen.size() == kThreads);
  CHECK(most_inside == kThreads);
}

TEST_CASE("PreadPool reports what pread did, as an io_uring completion would", "[io]") {
  testing::SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const unsigned threads = GENERATE(0u, 1u, 4u);  // 0: reads on Submit's thread
  INFO(threads << " threads");
  PreadPool pool(threads);
  CHECK(pool.num_threads() == threads);
  const int fd = open(weights.path().c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const uint64_t file_size = std::filesystem::file_size(weights.path());
  std::vector<std::byte> buffer(8192);
  int whole = 0, at_end = 0, past_end = 0, bad_fd = 0;

  pool.Submit({fd, buffer.data(), 4096, 0, &whole});
  PreadCompletion completion = pool.WaitOne();
  CHECK(completion.user_data == &whole);
  CHECK(completion.result == 4096);
  CHECK(std::memcmp(buffer.data(), weights.contents[0].data(), 4096) == 0);

  // Not retried inside the pool: a read crossing the end comes back short, one past it with 0.
  pool.Submit({fd, buffer.data(), 4096, file_size - 100, &at_end});
  completion = pool.WaitOne();
  CHECK(completion.user_data == &at_end);
  CHECK(completion.result == 100);
  pool.Submit({fd, buffer.data(), 4096, file_size + 4096, &past_end});
  CHECK(pool.WaitOne().result == 0);

  pool.Submit({-1, buffer.data(), 4096, 0, &bad_fd});
  completion = pool.WaitOne();
  CHECK(completion.user_data == &bad_fd);
  CHECK(completion.result == -EBADF);
  close(fd);
}

TEST_CASE("PreadPool passes -EINTR and -EAGAIN on for the reader to retry", "[io]") {
  const int error_number = GENERATE(EINTR, EAGAIN);
  PreadPool pool(2, [&](int, void*, size_t, off_t) -> ssize_t {
    errno = error_number;
    return -1;
  });
  pool.Submit({0, nullptr, 4096, 0, nullptr});
  CHECK(pool.WaitOne().result == -error_number);
}

}  // namespace
}  // namespace zinf::io
