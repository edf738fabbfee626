// HostJobQueue: jobs in a list the runner marks done, freed by the queuing thread.
#include "cuda/host/host_job_queue.h"

#include <thread>

#include "engine/error.h"

namespace zinf::cuda {

void* HostJobQueue::Add(std::function<void()> work) {
  while (!jobs_.empty() && jobs_.front().done.load(std::memory_order_acquire)) jobs_.pop_front();
  Job& job = jobs_.emplace_back();
  job.queue = this;
  job.sequence = added_++;
  job.work = std::move(work);
  return &job;
}

void HostJobQueue::CancelLast() {
  ZINF_CHECK(!jobs_.empty() && jobs_.back().sequence == added_ - 1 &&
                 ran_.load(std::memory_order_acquire) < added_,
             "no job to take back");
  jobs_.pop_back();
  --added_;
}

void HostJobQueue::WaitWhileRunning() const {
  while (running_.load(std::memory_order_acquire)) std::this_thread::yield();
}

void HostJobQueue::Run(void* opaque) noexcept {
  Job& job = *static_cast<Job*>(opaque);
  HostJobQueue& queue = *job.queue;
  queue.running_.store(true, std::memory_order_release);
  const int64_t expected = queue.ran_.load(std::memory_order_acquire);
  if (job.sequence != expected) {
    queue.RecordFailure(std::make_exception_ptr(Error(fmt::format(
        "host job {} ran when job {} was due: the stream ran its callbacks out of order",
        job.sequence, expected))));
  }
  if (!queue.failed_.load(std::memory_order_acquire)) {
    try {
      job.work();
    } catch (...) {
      queue.RecordFailure(std::current_exception());
    }
  }
  job.done.store(true, std::memory_order_release);
  queue.ran_.store(expected + 1, std::memory_order_release);
  queue.running_.store(false, std::memory_order_release);
}

void HostJobQueue::RecordFailure(std::exception_ptr error) noexcept {
  std::lock_guard lock(error_mutex_);
  if (!error_) error_ = std::move(error);
  failed_.store(true, std::memory_order_release);
}

void HostJobQueue::ThrowIfFailed() const {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(error_mutex_);
  std::rethrow_exception(error_);
}

}  // namespace zinf::cuda
