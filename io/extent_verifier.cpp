// ExtentVerifier: one thread that takes queued reads in order and hashes each as its chunks land.
#include "io/extent_verifier.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "engine/error.h"
#include "engine/xxh3.h"
#include "io/background_thread.h"

namespace zinf::io {

namespace {

[[noreturn]] void FailMismatch(const ExtentInfo& extent, uint64_t actual,
                               const ExtentReader& reader) {
  const std::string mismatch =
      fmt::format("checksum mismatch in {} of {} at offset {}: expected {:016x}, got {:016x}",
                  DescribeExtent(extent), reader.path(), extent.offset, extent.xxh3, actual);
  // Bytes rewritten under a running zinf are not a corrupt checkpoint: say what happened.
  if (std::optional<std::string> changed = reader.FileChangedError(mismatch)) {
    Fail("{}", *changed);
  }
  Fail("{}; the file is corrupt — convert again", mismatch);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double CheckExtentBytes(const ExtentInfo& extent, const std::byte* data,
                        const ExtentReader& reader) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t actual = XXH3_64bits(data, extent.size_bytes);
  const double seconds = SecondsSince(start);
  if (actual != extent.xxh3) FailMismatch(extent, actual, reader);
  return seconds;
}

ExtentVerifier::ExtentVerifier(ExtentReader& reader, int num_slots)
    : reader_(reader), slots_(static_cast<size_t>(num_slots)), hash_state_(XXH3_createState()) {
  ZINF_CHECK(hash_state_ != nullptr, "XXH3_createState failed");
  thread_ = StartBackgroundThread([this] { Loop(); });
}

ExtentVerifier::~ExtentVerifier() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  thread_.join();
}

void ExtentVerifier::Enqueue(int slot, ReadTicket ticket, const ExtentInfo& extent,
                             const std::byte* data) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    SlotStatus& status = slots_.at(static_cast<size_t>(slot));
    ZINF_CHECK(status.state == SlotState::kIdle, "staging slot {} already has a check queued",
               slot);
    status.state = SlotState::kQueued;
    jobs_.push_back({slot, ticket, &extent, data});
  }
  queued_.notify_one();
}

bool ExtentVerifier::Pending(int slot) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return slots_.at(static_cast<size_t>(slot)).state != SlotState::kIdle;
}

void ExtentVerifier::Wait(int slot) {
  std::unique_lock<std::mutex> lock(mutex_);
  SlotStatus& status = slots_.at(static_cast<size_t>(slot));
  ZINF_CHECK(status.state != SlotState::kIdle, "staging slot {} has no check to wait for", slot);
  done_.wait(lock, [&] { return status.state == SlotState::kDone; });
  status.state = SlotState::kIdle;
  if (std::exception_ptr failure = std::exchange(status.failure, nullptr)) {
    std::rethrow_exception(failure);
  }
}

double ExtentVerifier::checksum_seconds() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return checksum_seconds_;
}

void ExtentVerifier::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    queued_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    const Job job = jobs_.front();
    jobs_.pop_front();
    lock.unlock();
    double hashing = 0;
    std::exception_ptr failure;
    try {
      Check(job, hashing);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    checksum_seconds_ += hashing;
    SlotStatus& status = slots_[static_cast<size_t>(job.slot)];
    status.failure = failure;
    status.state = SlotState::kDone;
    done_.notify_all();
  }
}

void ExtentVerifier::Check(const Job& job, double& hashing) {
  // The hash follows the read a chunk at a time, so it ends just after the last chunk lands
  // instead of starting then.
  XXH3_64bits_reset(hash_state_.get());
  const uint64_t size = job.extent->size_bytes;
  for (uint64_t hashed = 0; hashed < size;) {
    const uint64_t landed = std::min(reader_.WaitForBytes(job.ticket, hashed), size);
    const auto start = std::chrono::steady_clock::now();
    XXH3_64bits_update(hash_state_.get(), job.data + hashed, landed - hashed);
    hashing += SecondsSince(start);
    hashed = landed;
  }
  reader_.WaitFor(job.ticket);  // a failed read is reported as that, not as a mismatch
  const uint64_t actual = XXH3_64bits_digest(hash_state_.get());
  if (actual != job.extent->xxh3) FailMismatch(*job.extent, actual, reader_);
}

}  // namespace zinf::io
