// The queue behind --kv-offload cpu's CPU attention, which a CUDA stream runs as host callbacks:
// jobs run in order on another thread while more are queued, each keeps its inputs until it has
// run, a failure stops the work after it and reaches the queuing thread, and a job run out of
// order is caught.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/host/host_job_queue.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace {

// A stand-in for the stream: runs what it is handed, in order, on a thread of its own.
class Runner {
 public:
  Runner() : thread_([this] { Loop(); }) {}
  ~Runner() {
    Hand(nullptr);
    thread_.join();
  }
  void Hand(void* job) {
    {
      std::lock_guard lock(mutex_);
      handed_.push_back(job);
    }
    ready_.notify_one();
  }

 private:
  void Loop() {
    for (;;) {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return !handed_.empty(); });
      void* job = handed_.front();
      handed_.pop_front();
      lock.unlock();
      if (job == nullptr) return;
      HostJobQueue::Run(job);
    }
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<void*> handed_;
  std::thread thread_;
};

void WaitUntilIdle(const HostJobQueue& queue) {
  while (queue.pending() > 0) std::this_thread::yield();
}

}  // namespace

TEST_CASE("host jobs run in queue order on the runner while more are queued") {
  HostJobQueue queue;
  std::vector<int> order;  // written by the runner only
  {
    Runner runner;
    for (int i = 0; i < 2000; ++i) runner.Hand(queue.Add([&order, i] { order.push_back(i); }));
    WaitUntilIdle(queue);
  }
  REQUIRE(order.size() == 2000);
  for (int i = 0; i < 2000; ++i) REQUIRE(order[i] == i);
  CHECK(queue.pending() == 0);
  CHECK_NOTHROW(queue.ThrowIfFailed());
}

TEST_CASE("a host job keeps what it captured until it has run; the next Add frees it") {
  HostJobQueue queue;
  auto inputs = std::make_shared<std::vector<int>>(3, 7);
  const std::weak_ptr<std::vector<int>> watch = inputs;
  int sum = 0;
  void* job = queue.Add([inputs = std::move(inputs), &sum] {
    for (int value : *inputs) sum += value;
  });
  CHECK(queue.pending() == 1);
  CHECK_FALSE(watch.expired());  // the queuing side dropped its copy; the job holds one
  HostJobQueue::Run(job);
  CHECK(sum == 21);
  CHECK(queue.pending() == 0);
  CHECK_FALSE(watch.expired());  // not freed inside Run: the runner frees nothing
  HostJobQueue::Run(queue.Add([] {}));
  CHECK(watch.expired());
}

TEST_CASE("a host job taken back after a failed launch does not hold up the ones after it") {
  HostJobQueue queue;
  std::vector<int> ran;
  void* first = queue.Add([&] { ran.push_back(0); });
  queue.Add([&] { ran.push_back(-1); });  // its launch "failed"
  queue.CancelLast();
  void* next = queue.Add([&] { ran.push_back(1); });
  CHECK(queue.pending() == 2);
  HostJobQueue::Run(first);
  HostJobQueue::Run(next);
  CHECK(ran == std::vector<int>{0, 1});
  CHECK(queue.pending() == 0);
  CHECK_NOTHROW(queue.ThrowIfFailed());
  CHECK_THROWS_WITH(queue.CancelLast(), Catch::Contains("no job to take back"));
}

TEST_CASE("a failed host job skips every later one and is reported on each check") {
  HostJobQueue queue;
  std::vector<int> ran;
  void* first = queue.Add([&] { ran.push_back(0); });
  void* failing = queue.Add([&] {
    ran.push_back(1);
    throw Error("attention of layer 3 failed");
  });
  void* later = queue.Add([&] { ran.push_back(2); });
  CHECK_NOTHROW(queue.ThrowIfFailed());
  HostJobQueue::Run(first);
  CHECK_NOTHROW(queue.ThrowIfFailed());
  HostJobQueue::Run(failing);
  HostJobQueue::Run(later);
  CHECK(ran == std::vector<int>{0, 1});
  CHECK(queue.pending() == 0);
  CHECK_THROWS_WITH(queue.ThrowIfFailed(), "attention of layer 3 failed");
  CHECK_THROWS_WITH(queue.ThrowIfFailed(), "attention of layer 3 failed");
  // Work queued after the failure is skipped too, rather than built on a missing result.
  bool ran_after = false;
  HostJobQueue::Run(queue.Add([&] { ran_after = true; }));
  CHECK_FALSE(ran_after);
}

TEST_CASE("a host job run before its predecessor fails the queue instead of running") {
  HostJobQueue queue;
  std::vector<int> ran;
  void* first = queue.Add([&] { ran.push_back(0); });
  void* second = queue.Add([&] { ran.push_back(1); });
  HostJobQueue::Run(second);
  HostJobQueue::Run(first);
  CHECK(ran.empty());
  CHECK_THROWS_WITH(queue.ThrowIfFailed(), Catch::Contains("out of order"));
}

}  // namespace zinf::cuda
