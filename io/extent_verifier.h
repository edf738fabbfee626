// Checks extents' XXH3-64 checksums: at once (CheckExtentBytes), or on a thread of its own as each
// staged read completes (ExtentVerifier), so the forward pass finds a prefetched extent checked.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/xxh3_state.h"
#include "io/extent_reader.h"

namespace zinf::io {

// Throws zinf::Error when `data` (extent.size_bytes of it) does not hash to extent.xxh3: "checksum
// mismatch in … — convert again", or, when the reader sees the file changed since it opened it,
// that ("… changed while zinf was running … — rerun"). Returns the seconds hashing took.
double CheckExtentBytes(const ExtentInfo& extent, const std::byte* data,
                        const ExtentReader& reader);

// Hashing reads an extent's bytes back from DRAM at about 10 GB/s on one core: on the thread that
// runs the step it was a sixth of a compute-bound step while the other threads waited, and in a
// disk-bound one it began only once the read had ended. Here one thread takes the queued reads in
// order and hashes each a chunk at a time as its chunks land, beside the step's threads, so the
// check ends just after its read; Wait(slot) returns once that staging slot's job is done.
// Each slot has at most one job at a time. Enqueue, Wait and checksum_seconds are called from one
// thread (the weight source's). Failure modes: Wait rethrows the job's failure, the read's
// zinf::Error or a checksum mismatch, once; the verifier stays usable. The destructor finishes the
// job in progress, drops the queued ones (their reads stay the reader's to drain) and joins.
class ExtentVerifier {
 public:
  // `reader` reads the slots' extents and must outlive the verifier.
  ExtentVerifier(ExtentReader& reader, int num_slots);
  ~ExtentVerifier();
  ExtentVerifier(const ExtentVerifier&) = delete;
  ExtentVerifier& operator=(const ExtentVerifier&) = delete;

  // Queues: wait for `ticket`'s read, then check `extent` over `data`. The slot must be idle (no
  // job, or its last one waited for); `extent` and `data` must stay valid until Wait(slot).
  void Enqueue(int slot, ReadTicket ticket, const ExtentInfo& extent, const std::byte* data);
  // True while the slot has a job not yet waited for.
  bool Pending(int slot) const;
  // Blocks until the slot's job is done, then makes the slot idle; throws the job's failure.
  void Wait(int slot);
  // Seconds spent hashing, all jobs so far.
  double checksum_seconds() const;

 private:
  struct Job {
    int slot = 0;
    ReadTicket ticket = 0;
    const ExtentInfo* extent = nullptr;
    const std::byte* data = nullptr;
  };
  enum class SlotState { kIdle, kQueued, kDone };
  struct SlotStatus {
    SlotState state = SlotState::kIdle;
    std::exception_ptr failure;
  };

  void Loop();
  // Hashes the job's extent as its chunks land (adding the time to `hashing`); throws the read's
  // error or a mismatch.
  void Check(const Job& job, double& hashing);

  ExtentReader& reader_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;  // a job was queued, or the verifier stops
  std::condition_variable done_;    // a job finished
  std::deque<Job> jobs_;
  std::vector<SlotStatus> slots_;
  double checksum_seconds_ = 0;
  bool stopping_ = false;
  Xxh3State hash_state_;  // the thread's
  std::thread thread_;
};

}  // namespace zinf::io
