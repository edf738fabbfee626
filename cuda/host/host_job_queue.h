// Work another thread runs in the order it was queued: a CUDA stream's host callbacks
// (cudaLaunchHostFunc), which --kv-offload cpu uses to attend on the CPU in the stream's order.
// Free of CUDA, so its ordering and failure handling are tested without a GPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <mutex>

namespace zinf::cuda {

// Add and ThrowIfFailed are called on the queuing thread, Run on the runner's thread, once per
// job and in the order Add returned them (what a CUDA stream guarantees for its callbacks).
// Destroy the queue only once the runner is idle (the stream has synchronised).
class HostJobQueue {
 public:
  // Queues `work` (which keeps whatever it captured until it has run); the result is the argument
  // for Run. Jobs that have run are freed here, on the queuing thread.
  void* Add(std::function<void()> work);
  // Takes back the job Add just returned, when it could not be handed to the runner (a failed
  // launch): otherwise it would wait forever and every later job would run "out of order".
  void CancelLast();
  // Runs one job, on the runner's thread. A job that throws fails the queue: its error is kept
  // and every later job is skipped, since each builds on its predecessors' results. A job run
  // out of order fails the queue too.
  static void Run(void* job) noexcept;
  // Once the runner has caught up (the stream synchronised): throws the first failure, again on
  // every later call, since the work after it never happened.
  void ThrowIfFailed() const;
  // Jobs queued and not yet run.
  int64_t pending() const { return added_ - ran_.load(std::memory_order_acquire); }
  // Returns once no job is running. A runner that stopped early (a CUDA context lost to an error
  // drops its callbacks) leaves jobs pending forever, so destruction waits for this, not for
  // pending() to reach 0.
  void WaitWhileRunning() const;

 private:
  struct Job {
    HostJobQueue* queue = nullptr;
    int64_t sequence = 0;
    std::function<void()> work;
    std::atomic<bool> done{false};
  };
  void RecordFailure(std::exception_ptr error) noexcept;

  std::list<Job> jobs_;  // oldest first; a list, so a queued job's address stays put
  int64_t added_ = 0;
  std::atomic<int64_t> ran_{0};  // also the sequence number the next job to run must carry
  std::atomic<bool> running_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace zinf::cuda
