// An owning, 4096-aligned host buffer that O_DIRECT and io_uring fixed-buffer reads can target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace zinf::io {

// Alignment of every AlignedBuffer's start and size: O_DIRECT needs the logical block size (at most
// 4096 on the devices zinf targets) and mmap hands out whole pages anyway.
inline constexpr uint64_t kBufferAlignment = 4096;

enum class PageLock {
  kNone,     // ordinary pageable memory
  kTryLock,  // mlock the pages; keep them pageable (one logged warning) when the limit refuses
};

// Owns an anonymous private mapping of size_bytes rounded up to kBufferAlignment, zero-filled.
// Move-only; the mapping is unmapped (and unlocked) on destruction. Not thread-safe: one owner.
// Fails by throwing zinf::Error when the memory cannot be mapped; a refused mlock is not a failure.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(uint64_t size_bytes, PageLock lock);
  ~AlignedBuffer();

  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::byte* data() const { return data_; }
  uint64_t size_bytes() const { return size_bytes_; }  // rounded up to kBufferAlignment
  bool locked() const { return locked_; }
  bool empty() const { return data_ == nullptr; }
  std::span<std::byte> span() const { return {data_, size_bytes_}; }

 private:
  void Reset();

  std::byte* data_ = nullptr;
  uint64_t size_bytes_ = 0;
  bool locked_ = false;
};

// Rounds up to a multiple of kBufferAlignment; throws zinf::Error on overflow.
uint64_t RoundUpToAlignment(uint64_t size_bytes);

}  // namespace zinf::io
