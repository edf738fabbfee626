// Reads extents of one weights file into caller-owned buffers with io_uring (O_DIRECT when allowed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/checkpoint.h"

struct io_uring;

namespace zinf::io {

// Test hook: sees every completed chunk read (file offset, requested length, kernel result) and
// returns the result the reader should act on, e.g. -EAGAIN, -EIO or a shorter count. The bytes
// the kernel really read stay in the buffer, so a faked short read just re-reads the rest.
using ReadFaultHook = std::function<int64_t(uint64_t file_offset, uint64_t length, int64_t result)>;

struct ReaderOptions {
  bool allow_direct_io = true;          // O_DIRECT when the filesystem accepts it
  bool use_io_uring = true;             // false: synchronous pread (also the fallback)
  unsigned queue_depth = 16;            // chunk reads in flight at once, the ring's size
  uint64_t chunk_bytes = 1ull << 20;    // 1 MiB: large enough for full device bandwidth, small
                                        // enough that 16 in flight keep several queues busy
  ReadFaultHook fault_hook;             // empty outside tests
};

// Names one submitted extent read; WaitFor takes it.
using ReadTicket = uint64_t;

// "extent layer.3 (layer 3)" or "extent embed": how errors name an extent.
std::string DescribeExtent(const ExtentInfo& extent);

// Owns the weights file descriptor(s) and one io_uring. The target buffers are registered once at
// construction and must outlive the reader; the destructor waits for every read still in flight.
// Not thread-safe: one thread submits and waits.
// Failure modes: construction throws zinf::Error when the file cannot be opened. Without io_uring
// (disabled by sysctl or seccomp) it warns once and reads with pread. Without O_DIRECT (tmpfs,
// some network filesystems) it logs once and uses buffered reads. A read error, or a file that
// ends inside an extent's bytes, is thrown from WaitFor of that read as zinf::Error naming the file,
// the extent and the byte offset.
class UringReader {
 public:
  UringReader(std::string path, std::vector<std::span<std::byte>> buffers,
              const ReaderOptions& options);
  ~UringReader();
  UringReader(const UringReader&) = delete;
  UringReader& operator=(const UringReader&) = delete;

  // Starts reading extent.padded_bytes at extent.offset into buffers[buffer_idx] and returns at
  // once (pread fallback: after reading). Bytes after EOF that lie past extent.size_bytes are padding
  // and left as they were.
  ReadTicket Submit(const ExtentInfo& extent, int buffer_idx);
  // Reaps completions until the read is complete; throws zinf::Error if it failed. Each ticket is
  // waited for at most once.
  void WaitFor(ReadTicket ticket);
  // True when the read has finished (successfully or not) without waiting for it.
  bool IsDone(ReadTicket ticket) const;

  const std::string& path() const { return path_; }
  uint64_t file_size_bytes() const { return file_size_bytes_; }
  bool direct_io() const { return direct_io_; }
  bool uses_io_uring() const { return ring_ != nullptr; }
  bool buffers_registered() const { return buffers_registered_; }
  uint64_t bytes_read() const { return bytes_read_; }  // what the kernel delivered, all reads

 private:
  struct Chunk {
    ReadTicket ticket = 0;
    int buffer_idx = 0;
    std::byte* dest = nullptr;
    uint64_t file_offset = 0;
    uint64_t length = 0;
    uint64_t content_end = 0;  // file offset where the extent's tensors end; past it is padding
    bool sent_direct = false;  // read through the O_DIRECT descriptor: EINVAL means fall back
  };
  struct TicketState {
    std::string extent_label;  // "extent layer.3 (layer 3)"
    uint64_t extent_offset = 0;
    uint64_t extent_end = 0;   // offset + size_bytes
    uint64_t chunks_left = 0;  // queued or in flight
    std::optional<std::string> error;
  };
  enum class ChunkOutcome { kDone, kRequeue };

  void OpenFile(bool direct);
  void SetUpRing(const ReaderOptions& options);
  void FallBackToBuffered(const std::string& reason);
  // Applies one read result to a chunk; advances it on a short read. kDone also covers failures,
  // which are recorded in the ticket.
  ChunkOutcome OnResult(Chunk& chunk, int64_t result);
  void FinishChunk(const Chunk& chunk);
  void ReadSync(Chunk chunk);
  void SubmitQueued();
  void ReapOne();
  void Drain();

  std::string path_;
  std::vector<std::span<std::byte>> buffers_;
  ReaderOptions options_;
  int fd_ = -1;
  int direct_fd_ = -1;  // kept open after a fallback: reads in flight may still use it
  bool direct_io_ = false;
  uint64_t file_size_bytes_ = 0;
  std::unique_ptr<io_uring> ring_;
  bool buffers_registered_ = false;
  unsigned in_flight_ = 0;
  std::deque<std::unique_ptr<Chunk>> queued_;
  std::unordered_map<ReadTicket, TicketState> tickets_;
  ReadTicket next_ticket_ = 1;
  uint64_t bytes_read_ = 0;
};

}  // namespace zinf::io
