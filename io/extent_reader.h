// Reads extents of one weights file into caller-owned buffers with io_uring, or a pool of pread
// threads where io_uring is refused or not wanted (O_DIRECT when allowed).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/checkpoint.h"
#include "io/file_identity.h"
#include "io/pread_pool.h"

struct io_uring;

namespace zinf::io {

// Test hook: sees every completed chunk read (file offset, requested length, kernel result) and
// returns the result the reader should act on, e.g. -EAGAIN, -EIO or a shorter count. The bytes
// the kernel really read stay in the buffer, so a faked short read just re-reads the rest.
// Called on the reader's completion thread, one call at a time, whichever backend reads.
using ReadFaultHook = std::function<int64_t(uint64_t file_offset, uint64_t length, int64_t result)>;

struct ReaderOptions {
  bool allow_direct_io = true;  // O_DIRECT when the filesystem accepts it
  bool use_io_uring = true;     // false: the pread pool (also the fallback)
  // Chunk reads in flight at once (the ring's size). 16 x 1 MiB matches what NVMe drives need for
  // full sequential bandwidth; far more in flight made a virtio disk slower (fio: 16 beat 64, 128).
  unsigned queue_depth = 16;
  uint64_t chunk_bytes = 1ull << 20;  // 1 MiB: large enough for full device bandwidth, small
                                      // enough that 16 in flight keep several queues busy
  // Without io_uring: threads each blocked in one pread of a chunk. Four streamed as fast as
  // io_uring at depth 16 in bench/tiered_streaming.sh (2 GB/s virtio disk); where io_uring works
  // the pool is never built.
  unsigned pread_threads = 4;
  ReadFaultHook fault_hook;  // empty outside tests
};

// The environment variable that overrides ReaderOptions::use_io_uring for every reader of the
// process: "pread" forces the pread pool (how tests and users check that path), "io_uring" makes
// a refused io_uring an error instead of a fallback, "auto" or unset keeps the options' choice.
inline constexpr const char* kIoBackendEnv = "ZINF_IO_BACKEND";

// Names one submitted extent read; WaitFor takes it.
using ReadTicket = uint64_t;

// "extent layer.3 (layer 3)" or "extent embed": how errors name an extent.
std::string DescribeExtent(const ExtentInfo& extent);

// Owns the weights file descriptor(s), one io_uring or pread pool, and a completion thread that
// reaps finished reads and sends queued ones, so an extent submitted for prefetch is read to the
// end while its caller computes (the caller need not come back to keep the queue full). The
// target buffers are registered once at construction and must outlive the reader; the destructor
// waits for every read still in flight. The public methods take the reader's lock, so one thread
// may submit while another waits (TieredWeightSource's verifier waits for each read it checks).
// Failure modes: construction throws zinf::Error when the file cannot be opened, or when
// ZINF_IO_BACKEND is unknown or demands an io_uring that is refused. Without io_uring (disabled by
// sysctl or seccomp) it warns once and reads with the pread pool. Without O_DIRECT (tmpfs, some
// network filesystems) it logs once and uses buffered reads. A read error, or a file that ends
// inside an extent's bytes, is thrown from WaitFor of that read as zinf::Error naming the file,
// the extent and the byte offset; when the file was truncated or rewritten since the reader opened
// it, the error says so ("changed while zinf was running … — rerun").
class ExtentReader {
 public:
  ExtentReader(std::string path, std::vector<std::span<std::byte>> buffers,
               const ReaderOptions& options);
  ~ExtentReader();
  ExtentReader(const ExtentReader&) = delete;
  ExtentReader& operator=(const ExtentReader&) = delete;

  // Starts reading extent.padded_bytes at extent.offset into buffers[buffer_idx] and returns at
  // once. Bytes after EOF that lie past extent.size_bytes are padding and left as they were.
  ReadTicket Submit(const ExtentInfo& extent, int buffer_idx);
  // Blocks until the read is complete; throws zinf::Error if it failed. Each ticket is waited for
  // at most once.
  void WaitFor(ReadTicket ticket);
  // True when the read has finished (successfully or not) without waiting for it.
  bool IsDone(ReadTicket ticket) const;
  // Blocks until more than `beyond` of the extent's bytes, counted from its start, have landed
  // in one run with no gap, or the read has ended; returns how many have (all padded_bytes once
  // it ended, failed or not: WaitFor says which). Lets a checksum follow the read chunk by chunk.
  // Throws zinf::Error only when the reader as a whole failed.
  uint64_t WaitForBytes(ReadTicket ticket, uint64_t beyond);

  const std::string& path() const { return path_; }
  uint64_t file_size_bytes() const { return file_size_bytes_; }  // at open
  bool direct_io() const;
  bool uses_io_uring() const { return ring_ != nullptr; }
  bool buffers_registered() const { return buffers_registered_; }
  uint64_t bytes_read() const;  // what the kernel delivered, all reads
  // Seconds during which at least one read was queued or in flight: bytes_read() ÷ this is the
  // rate the storage delivered while zinf read from it, whether or not compute kept up.
  double busy_seconds() const;
  // How reads are issued and why, for start-up logs: "io_uring with registered buffers" or
  // "4 pread threads (ZINF_IO_BACKEND=pread)".
  std::string DescribeBackend() const;
  // When the file was truncated, rewritten or replaced since it was opened: the error to report
  // instead of `failure` (which comes after it, as the symptom). nullopt when it is unchanged.
  std::optional<std::string> FileChangedError(const std::string& failure) const;

 private:
  struct Chunk {
    ReadTicket ticket = 0;
    int buffer_idx = 0;
    std::byte* dest = nullptr;
    uint64_t file_offset = 0;
    uint64_t length = 0;
    uint64_t content_end = 0;  // file offset where the extent's tensors end; past it is padding
    bool sent_direct = false;  // read through the O_DIRECT descriptor: EINVAL means fall back
    size_t index = 0;          // the extent's chunk_bytes-sized chunk this is
  };
  struct TicketState {
    std::string extent_label;  // "extent layer.3 (layer 3)"
    uint64_t extent_offset = 0;
    uint64_t extent_end = 0;   // offset + size_bytes
    uint64_t chunks_left = 0;  // queued or in flight
    uint64_t padded_bytes = 0;
    std::vector<bool> chunk_done;  // by Chunk::index
    size_t done_prefix = 0;        // chunks 0 .. done_prefix-1 are done
    std::optional<std::string> error;
  };
  enum class ChunkOutcome { kDone, kRequeue };

  void OpenFile(bool direct);
  void SetUpBackend();
  bool SetUpRing();  // false: io_uring refused, backend_reason_ says why
  void StartCompletionThread();
  void StopCompletionThread();

  // Below, "locked": called with mutex_ held.
  void FallBackToBuffered(const std::string& reason);  // locked
  // Applies one read result to a chunk; advances it on a short read. kDone also covers failures,
  // which are recorded in the ticket. Locked.
  ChunkOutcome OnResult(Chunk& chunk, int64_t result);
  void FinishChunk(const Chunk& chunk);  // locked
  void SubmitQueued();  // locked: sends queued chunks while fewer than the depth fly
  void FlushRing();     // locked: io_uring_submit, retrying what can be retried
  std::optional<std::string> ChangedError(const std::string& failure) const;  // locked
  // The completion thread: waits for a finished read (unlocked), then applies it (locked).
  void CompletionLoop();
  // Requeues the chunk (a retry) or finishes it, then sends more. Locked.
  void OnCompletion(std::unique_ptr<Chunk> chunk, int64_t result);
  void WaitUntilIdle();  // destructor: every read sent has completed
  void NoteBusyState();  // locked: starts or ends a busy period, after the queues changed

  std::string path_;
  std::vector<std::span<std::byte>> buffers_;
  ReaderOptions options_;
  int fd_ = -1;
  int direct_fd_ = -1;  // kept open after a fallback: reads in flight may still use it
  bool direct_io_ = false;
  uint64_t file_size_bytes_ = 0;
  FileIdentity identity_;  // of the file at open: what FileChangedError compares against
  std::unique_ptr<io_uring> ring_;
  std::unique_ptr<PreadPool> pool_;  // set exactly when ring_ is not
  std::string backend_reason_;       // why the pool reads, for DescribeBackend
  bool buffers_registered_ = false;

  // Shared between the caller's thread and the completion thread, guarded by mutex_ (so is fd_,
  // direct_io_ and direct_fd_, which the buffered fallback changes).
  mutable std::mutex mutex_;
  std::condition_variable progress_;  // a chunk finished, or the completion thread failed
  unsigned in_flight_ = 0;            // sent to the ring or the pool and not yet reaped
  std::deque<std::unique_ptr<Chunk>> queued_;
  std::unordered_map<ReadTicket, TicketState> tickets_;
  ReadTicket next_ticket_ = 1;
  uint64_t bytes_read_ = 0;
  bool stopping_ = false;                                            // destructor: no more retries
  std::optional<std::chrono::steady_clock::time_point> busy_since_;  // set while reads are pending
  double busy_seconds_ = 0;            // of the busy periods that ended
  std::optional<std::string> broken_;  // the ring failed as a whole: every wait throws this
  bool reaper_exited_ = false;         // the completion thread stopped on such a failure
  std::thread completion_thread_;
};

}  // namespace zinf::io
