// The WeightSource that keeps some extents resident and streams the rest through a staging ring.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/weight_source.h"
#include "io/aligned_buffer.h"
#include "io/extent_reader.h"
#include "io/extent_verifier.h"
#include "io/weight_source_factory.h"

namespace zinf::io {

struct TieredOptions {
  int prefetch_depth = 1;  // streamed: extents read ahead of the one acquired
  // Streamed: extra staging buffers for a device backend still copying out of released ones.
  // With one, the buffer a Prefetch takes was released two extents ago, so its copy fence finds
  // that copy done while the copy of the extent just released runs on: the host never waits on
  // the copy engine (which would leave it idle until the host queued the next copy).
  int copy_buffers = 0;
  PageLock staging_lock = PageLock::kTryLock;  // staging buffers are few and hot: keep them in RAM
  // The DRAM tier: page-locked when RLIMIT_MEMLOCK (or CAP_IPC_LOCK) allows, so the planner's
  // resident extents are never paged out under memory pressure; one logged warning otherwise.
  PageLock resident_lock = PageLock::kTryLock;
  ReaderOptions reader;
};

// Serves each extent from where its placement says:
//  - kResident: read once at construction (all such extents in flight together), checksum verified
//    once, kept for the source's lifetime; Acquire returns the kept bytes.
//  - kStreamed: read on every pass into one of prefetch_depth + 1 + copy_buffers staging buffers,
//    each as large as the largest streamed extent and registered with io_uring once.
//    Prefetch(i) starts the read into the least recently released free buffer and queues its
//    XXH3-64 check on the verifier's thread (io/extent_verifier.h), which runs it once the read
//    lands; Acquire(i) waits for both (starting them first if needed); Release(i) frees the buffer.
// Release's CopyFence (a device may still be copying the bytes) is kept with a streamed extent's
// buffer and called just before the buffer takes another read, or when the source is destroyed;
// a resident extent's is dropped, since its bytes are never overwritten.
// Placement is per extent so a planner can mix both. Owns all buffers, the file descriptor and the
// ring; copies the extent table, so ExtentView::info stays valid as long as the source.
// Not thread-safe: one forward-pass thread drives it.
// Failure modes: construction throws zinf::Error for a bad extent table, a file shorter than its
// extents, or a failed/corrupt resident read. Acquire throws zinf::Error naming the extent for an
// I/O error, truncation or checksum mismatch; the source stays usable (the extent can be retried).
// A short read or mismatch in a file truncated, rewritten or replaced since the source opened it
// is reported as that ("… changed while zinf was running (size X → Y bytes) — rerun …"); either
// way Acquire never returns bytes whose checksum does not match.
// Acquiring twice without Release, releasing an extent not acquired, or acquiring more streamed
// extents at once than there are staging buffers is a bug: ZINF_CHECK.
class TieredWeightSource final : public WeightSource {
 public:
  TieredWeightSource(const Checkpoint& checkpoint, std::vector<WeightPlacement> placements,
                     const TieredOptions& options);
  ~TieredWeightSource() override;

  void Prefetch(int extent_idx) override;
  ExtentView Acquire(int extent_idx) override;
  void Release(int extent_idx, CopyFence fence = {}) override;
  int prefetch_depth() const override;
  WeightIoStats stats() const override;
  std::vector<std::span<const std::byte>> HostMemory() const override;

  bool direct_io() const { return reader_->direct_io(); }
  bool uses_io_uring() const { return reader_->uses_io_uring(); }
  int num_staging_buffers() const { return static_cast<int>(slots_.size()); }
  uint64_t resident_bytes() const;
  // One line for start-up logs, e.g. "streamed 26 extents through 3 x 4.0 MiB buffers, O_DIRECT,
  // io_uring with registered buffers; 2 resident (1.5 MiB)", or with "4 pread threads (io_uring
  // unavailable: Operation not permitted)" in the middle when io_uring is not used.
  std::string Describe() const;

 private:
  struct ExtentState {
    WeightPlacement placement = WeightPlacement::kStreamed;
    int resident_idx = -1;  // into resident_buffers_
    int slot_idx = -1;      // streamed: the staging buffer holding or receiving it
    bool acquired = false;
  };
  struct Slot {
    int buffer_idx = 0;   // the reader's index of this staging buffer
    int extent_idx = -1;  // -1: free; its read and check are verifier_'s until waited for
    CopyFence fence;      // a free buffer's last extent may still be read by a device: call first
  };

  void ValidateExtents() const;
  void CheckFileLength() const;
  void LoadResident();
  void StartRead(int extent_idx, int slot_idx);
  int TakeFreeSlot();
  int TakeSlotForAcquire(int extent_idx);
  void FreeSlot(int slot_idx);
  ExtentView MakeView(int extent_idx, const std::byte* data) const;

  std::string weights_file_;
  std::vector<ExtentInfo> extents_;
  std::vector<ExtentState> states_;
  int prefetch_depth_ = 0;
  // Buffers are declared before the reader so the reader (draining reads into them) dies first.
  std::vector<AlignedBuffer> resident_buffers_;
  std::vector<AlignedBuffer> staging_buffers_;
  std::vector<Slot> slots_;
  std::deque<int> free_slots_;  // least recently released first
  std::unique_ptr<ExtentReader> reader_;
  std::unique_ptr<ExtentVerifier> verifier_;  // after reader_: joins before the reader goes
  uint64_t extents_read_ = 0;
  double read_wait_seconds_ = 0;
  double checksum_seconds_ = 0;
};

}  // namespace zinf::io
