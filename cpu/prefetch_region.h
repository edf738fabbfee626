// Software requests for a region of weights into L2, a share at a time: the next row tile's
// lines asked for while the current tile computes, so that their reads from DRAM overlap its
// products instead of stalling the unpacking that starts the next tile.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>

namespace zinf::cpu {

// Part `part` of `parts` of the lines of [region, region + bytes), into L2 (parts 1: all of them).
inline __attribute__((always_inline)) void PrefetchRegionShare(const void* region, int64_t bytes,
                                                               int64_t part, int64_t parts) {
  const int64_t lines = (bytes + 63) / 64;
  const char* base = static_cast<const char*>(region);
  for (int64_t line = lines * part / parts; line < lines * (part + 1) / parts; ++line)
    _mm_prefetch(base + 64 * line, _MM_HINT_T1);
}

// The lines of `pieces` pieces of `piece_bytes` each, `stride` bytes apart (a tile's rows, or a
// chunk of each), requested into L2 a few at a time: each RequestShare asks for the next
// ceil(lines / shares) of them, piece by piece, until all are asked for. A pass over a tile calls
// it once a block or a step, so that the requests are spread over the pass: asked for all at once,
// a few hundred lines outran the misses Zen 1 keeps in flight, and the next tile's first loads
// waited for them. The count per share is worked out once here (a division per call had cost
// int4's 32-value groups 4-14% on Zen 1).
class LineRequests {
 public:
  LineRequests() = default;  // requests nothing

  LineRequests(const void* first, int64_t piece_bytes, int64_t stride, int64_t pieces,
               int64_t shares)
      : piece_(reinterpret_cast<uintptr_t>(first)),
        line_(AlignedDown(piece_)),
        piece_end_(piece_ + piece_bytes),
        piece_bytes_(piece_bytes),
        stride_(stride),
        pieces_left_(piece_bytes > 0 ? pieces : 0) {
    // Each piece as many lines as the first (from the line its start lies in).
    const int64_t lines = pieces * static_cast<int64_t>((piece_end_ - line_ + 63) / 64);
    shares = std::max<int64_t>(shares, 1);
    lines_per_share_ = (lines + shares - 1) / shares;
  }

  // Always inlined: GCC takes a call whose only effect is a prefetch for one without effects and
  // deletes it (so the int4 lanes had lost theirs from b2a77e6 to the fix).
  __attribute__((always_inline)) void RequestShare() {
    for (int64_t i = 0; i < lines_per_share_ && pieces_left_ > 0; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(line_), _MM_HINT_T1);
      line_ += 64;
      if (line_ >= piece_end_) {
        piece_ += stride_;
        line_ = AlignedDown(piece_);
        piece_end_ = piece_ + piece_bytes_;
        --pieces_left_;
      }
    }
  }

 private:
  static uintptr_t AlignedDown(uintptr_t address) { return address & ~uintptr_t{63}; }

  // Addresses as integers: past the last piece the walk forms one more piece's address, which as
  // a pointer would lie outside the weights.
  uintptr_t piece_ = 0;
  uintptr_t line_ = 0;
  uintptr_t piece_end_ = 0;
  int64_t piece_bytes_ = 0;
  int64_t stride_ = 0;
  int64_t pieces_left_ = 0;
  int64_t lines_per_share_ = 0;
};

}  // namespace zinf::cpu
