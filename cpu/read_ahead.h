// Weights a pool thread fetches into L2 while it waits: between a decode step's products the
// calling thread works alone (norms, rope, sampling) and the memory bus would idle, so a thread
// done with its part of one product fetches its part of the next one meanwhile.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace zinf::cpu {

// Streams read side by side, a chunk of each in turn (as the one-token kernels read rows a stride
// apart): stream s covers [begin + s·stride, begin + s·stride + stream_bytes).
struct ReadAheadSegment {
  const std::byte* begin = nullptr;
  int64_t stride = 0;
  int streams = 0;
  int64_t stream_bytes = 0;
  int64_t chunk_bytes = 0;
};

// A thread's read-ahead: segments in order, at most a budget of bytes in all, walked a few lines
// per step so that the waiting thread keeps checking for its next call.
class ReadAheadPlan {
 public:
  static constexpr int kMaxSegments = 4;
  static constexpr int64_t kLineBytes = 64;
  static constexpr int kLinesPerStep = 8;

  void Clear();
  // Empty segments, and those beyond kMaxSegments, are left out.
  void Add(const ReadAheadSegment& segment);
  // Restarts the walk over the segments, at most budget_bytes of them.
  void Start(int64_t budget_bytes);
  // Requests the next kLinesPerStep lines into L2; false once the plan is done.
  bool Step();

  // Calls line(address) for the next lines (at most max_lines) in the plan's order; false once
  // the plan is done. Step is this with a prefetch; tests record the order.
  template <typename LineFn>
  bool NextLines(int max_lines, LineFn&& line);

 private:
  std::array<ReadAheadSegment, kMaxSegments> segments_;
  int count_ = 0;
  // The cursor: segment, round (chunk index within each stream), stream, byte within the chunk.
  int segment_ = 0;
  int64_t round_ = 0;
  int stream_ = 0;
  int64_t offset_ = 0;
  int64_t budget_left_ = 0;
};

// The calling thread's plan (each thread has its own; empty until set).
ReadAheadPlan& ThisThreadReadAhead();

template <typename LineFn>
bool ReadAheadPlan::NextLines(int max_lines, LineFn&& line) {
  for (int lines = 0; lines < max_lines;) {
    if (segment_ >= count_ || budget_left_ <= 0) return false;
    const ReadAheadSegment& s = segments_[segment_];
    const int64_t chunk_begin = round_ * s.chunk_bytes;
    if (chunk_begin >= s.stream_bytes) {  // this segment is done
      ++segment_;
      round_ = 0;
      stream_ = 0;
      offset_ = 0;
      continue;
    }
    const int64_t chunk = std::min(s.chunk_bytes, s.stream_bytes - chunk_begin);
    const std::byte* base = s.begin + stream_ * s.stride + chunk_begin;
    for (; offset_ < chunk && lines < max_lines && budget_left_ > 0;
         offset_ += kLineBytes, ++lines) {
      line(base + offset_);
      budget_left_ -= kLineBytes;
    }
    if (offset_ >= chunk) {
      offset_ = 0;
      if (++stream_ == s.streams) {
        stream_ = 0;
        ++round_;
      }
    }
  }
  return true;
}

}  // namespace zinf::cpu
