// PreadPool: a request queue served by a few threads, a completion queue reaped by the reader.
#include "io/pread_pool.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "io/background_thread.h"

namespace zinf::io {

PreadPool::PreadPool(unsigned num_threads, PreadFunction read) : read_(std::move(read)) {
  if (!read_) {
    read_ = [](int fd, void* dest, size_t length, off_t offset) {
      return ::pread(fd, dest, length, offset);
    };
  }
  workers_.reserve(num_threads);  // push_back must not throw with a thread running
  for (unsigned idx = 0; idx < num_threads; ++idx) {
    try {
      workers_.push_back(StartBackgroundThread([this] { WorkerLoop(); }));
    } catch (const std::system_error& error) {
      spdlog::warn("could start only {} of {} pread threads ({}); reads overlap less", idx,
                   num_threads, error.what());
      break;
    }
  }
}

PreadPool::~PreadPool() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  request_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void PreadPool::Submit(const PreadRequest& request) {
  if (workers_.empty()) {  // no thread could start: read now, reap later as usual
    const PreadCompletion completion = Read(request);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      completions_.push_back(completion);
    }
    completion_ready_.notify_one();
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(request);
  }
  request_ready_.notify_one();
}

PreadCompletion PreadPool::WaitOne() {
  std::unique_lock<std::mutex> lock(mutex_);
  completion_ready_.wait(lock, [this] { return !completions_.empty(); });
  const PreadCompletion completion = completions_.front();
  completions_.pop_front();
  return completion;
}

PreadCompletion PreadPool::Read(const PreadRequest& request) const {
  const ssize_t count =
      read_(request.fd, request.dest, request.length, static_cast<off_t>(request.file_offset));
  return {request.user_data, count < 0 ? -static_cast<int64_t>(errno) : count};
}

void PreadPool::WorkerLoop() {
  while (true) {
    PreadRequest request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      request_ready_.wait(lock, [this] { return stopping_ || !requests_.empty(); });
      if (stopping_) return;
      request = requests_.front();
      requests_.pop_front();
    }
    const PreadCompletion completion = Read(request);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      completions_.push_back(completion);
    }
    completion_ready_.notify_one();
  }
}

}  // namespace zinf::io
