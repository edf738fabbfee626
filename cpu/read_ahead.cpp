// ReadAheadPlan's bookkeeping and its prefetching step.
#include "cpu/read_ahead.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace zinf::cpu {

void ReadAheadPlan::Clear() {
  count_ = 0;
  budget_left_ = 0;
}

void ReadAheadPlan::Add(const ReadAheadSegment& segment) {
  if (count_ >= kMaxSegments || segment.begin == nullptr || segment.streams <= 0 ||
      segment.stream_bytes <= 0 || segment.chunk_bytes <= 0) {
    return;
  }
  segments_[count_++] = segment;
}

void ReadAheadPlan::Start(int64_t budget_bytes) {
  segment_ = 0;
  round_ = 0;
  stream_ = 0;
  offset_ = 0;
  budget_left_ = budget_bytes;
}

bool ReadAheadPlan::Step() {
  return NextLines(kLinesPerStep, [](const std::byte* at) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_prefetch(reinterpret_cast<const char*>(at), _MM_HINT_T1);
#else
    __builtin_prefetch(at, 0, 2);
#endif
  });
}

ReadAheadPlan& ThisThreadReadAhead() {
  thread_local ReadAheadPlan plan;
  return plan;
}

}  // namespace zinf::cpu
