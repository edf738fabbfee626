// ExtentVerifier: one thread that takes queued reads in order and hashes each as its chunks land.
#include "io/extent_verifier.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "engine/xxh3.h"
#include "io/background_thread.h"

namespace zinf::io {

namespace {

// What a check hashes: the extent's bytes under its checksum, or, for a layer's part, each of its
// tensors under the tensor's own (engine/layer_parts.h).
struct CheckedRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t expected = 0;
  const TensorInfo* tensor = nullptr;  // null: the whole extent
};

std::vector<CheckedRange> CheckedRanges(const ExtentInfo& extent) {
  if (!extent.checked_by_tensor()) return {{0, extent.size_bytes, extent.xxh3, nullptr}};
  std::vector<CheckedRange> ranges;
  for (const TensorInfo& tensor : extent.tensors) {
    ZINF_CHECK(tensor.xxh3.has_value(), "tensor {} of {} has no checksum", tensor.name,
               extent.name);
    ranges.push_back({tensor.offset_in_extent, tensor.offset_in_extent + tensor.size_bytes,
                      *tensor.xxh3, &tensor});
  }
  return ranges;
}

[[noreturn]] void FailMismatch(const ExtentInfo& extent, const CheckedRange& range, uint64_t actual,
                               const ExtentReader& reader) {
  const std::string what =
      range.tensor == nullptr
          ? DescribeExtent(extent)
          : fmt::format("tensor '{}' of {}", range.tensor->name, DescribeExtent(extent));
  const std::string mismatch =
      fmt::format("checksum mismatch in {} of {} at offset {}: expected {:016x}, got {:016x}", what,
                  reader.path(), extent.offset + range.begin, range.expected, actual);
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
  double seconds = 0;
  for (const CheckedRange& range : CheckedRanges(extent)) {
    const auto start = std::chrono::steady_clock::now();
    const uint64_t actual = XXH3_64bits(data + range.begin, range.end - range.begin);
    seconds += SecondsSince(start);
    if (actual != range.expected) FailMismatch(extent, range, actual, reader);
  }
  return seconds;
}

ExtentVerifier::ExtentVerifier(ExtentReader& reader, int num_slots)
    : reader_(reader), slots_(static_cast<size_t>(num_slots)), hash_state_(NewXxh3State()) {
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
  // instead of starting then. A mismatch is reported once the whole read is in: a failed read is
  // reported as that, not as a mismatch.
  std::optional<std::pair<CheckedRange, uint64_t>> mismatch;
  uint64_t landed = 0;
  for (const CheckedRange& range : CheckedRanges(*job.extent)) {
    XXH3_64bits_reset(hash_state_.get());
    for (uint64_t hashed = range.begin; hashed < range.end;) {
      if (landed <= hashed) landed = reader_.WaitForBytes(job.ticket, hashed);
      const uint64_t until = std::min(landed, range.end);
      const auto start = std::chrono::steady_clock::now();
      XXH3_64bits_update(hash_state_.get(), job.data + hashed, until - hashed);
      hashing += SecondsSince(start);
      hashed = until;
    }
    const uint64_t actual = XXH3_64bits_digest(hash_state_.get());
    if (actual != range.expected && !mismatch) mismatch.emplace(range, actual);
  }
  reader_.WaitFor(job.ticket);
  if (mismatch) FailMismatch(*job.extent, mismatch->first, mismatch->second, reader_);
}

}  // namespace zinf::io
