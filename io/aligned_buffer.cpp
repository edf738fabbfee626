// AlignedBuffer: anonymous mappings, optionally page-locked, with a single warning when mlock fails.
#include "io/aligned_buffer.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/error.h"

namespace zinf::io {
namespace {

// One warning per process: every buffer after the first would fail the same way.
std::atomic<bool> g_mlock_warned{false};

void WarnMlockRefusedOnce(uint64_t size_bytes, int error_number) {
  if (g_mlock_warned.exchange(true)) return;
  rlimit limit{};
  getrlimit(RLIMIT_MEMLOCK, &limit);
  spdlog::warn(
      "could not page-lock a {} byte weight buffer ({}; RLIMIT_MEMLOCK is {} bytes); continuing "
      "with pageable memory, which may be swapped out. Raise it with `ulimit -l unlimited` to "
      "lock.",
      size_bytes, std::strerror(error_number), limit.rlim_cur);
}

}  // namespace

uint64_t RoundUpToAlignment(uint64_t size_bytes) {
  const uint64_t rounded =
      (size_bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (rounded < size_bytes) Fail("buffer size {} bytes overflows when aligned", size_bytes);
  return rounded;
}

AlignedBuffer::AlignedBuffer(uint64_t size_bytes, PageLock lock) {
  if (size_bytes == 0) return;
  const uint64_t mapped_bytes = RoundUpToAlignment(size_bytes);
  // An anonymous private mapping is page-aligned (>= 4096) and zero-filled; unlike posix_memalign it
  // returns huge buffers straight to the kernel on munmap.
  void* mapping =
      mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    Fail("could not allocate a {} byte weight buffer: {}", mapped_bytes, std::strerror(errno));
  }
  data_ = static_cast<std::byte*>(mapping);
  size_bytes_ = mapped_bytes;
  if (lock == PageLock::kTryLock) {
    if (mlock(data_, size_bytes_) == 0) {
      locked_ = true;
    } else {
      WarnMlockRefusedOnce(size_bytes_, errno);
    }
  }
}

AlignedBuffer::~AlignedBuffer() { Reset(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)),
      locked_(std::exchange(other.locked_, false)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    locked_ = std::exchange(other.locked_, false);
  }
  return *this;
}

void AlignedBuffer::Reset() {
  if (data_ == nullptr) return;
  if (locked_) munlock(data_, size_bytes_);
  munmap(data_, size_bytes_);
  data_ = nullptr;
  size_bytes_ = 0;
  locked_ = false;
}

}  // namespace zinf::io
