// `zinf generate --fault-inject SPEC` (testing only): makes the weight reader see short reads,
// -EAGAIN, -EIO or a flipped bit, so the recovery and error paths run through the real binary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/checkpoint.h"
#include "io/extent_reader.h"

namespace zinf::cli {

enum class FaultKind : uint8_t {
  kShortRead,  // "short": each chunk read first comes back short; the reader re-reads the rest
  kEagain,     // "eagain": each chunk read first fails with -EAGAIN; the reader resubmits it
  kEio,        // "eio:EXTENT@N": the N-th read of EXTENT fails with -EIO
  kBitFlip,    // "flip:EXTENT@N": the N-th read of EXTENT delivers one flipped bit
};

struct Fault {
  FaultKind kind = FaultKind::kShortRead;
  std::string
      extent;        // eio and flip: an extent name from the manifest ("embed", "layer.2", "head")
  int nth_read = 1;  // eio and flip: 1-based; a streamed extent is read once per forward pass
};

// Parses a comma-separated SPEC, e.g. "short,eagain" or "eio:layer.1@40". Throws zinf::Error
// naming the bad item. Extent names are checked later, against the checkpoint.
std::vector<Fault> ParseFaultSpec(std::string_view spec);

// Owns the state of the faults of one run: per-offset toggles, read counters, and for bit flips a
// private in-memory copy of the weights file (a memfd), so the user's file is never written.
// The hook it hands out must be used by one reader only and must not outlive the injector.
// Not thread-safe (the reader calls its hook from its completion thread, one call at a time).
// Failure: the constructor throws zinf::Error for an unknown extent name, or when the weights file
// cannot be copied for a bit flip.
class FaultInjector {
 public:
  FaultInjector(const Checkpoint& checkpoint, std::vector<Fault> faults);
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // The path the weight source should open: the checkpoint's own file, or with a bit flip the
  // private copy ("/proc/self/fd/N").
  const std::string& weights_path() const { return weights_path_; }
  io::ReadFaultHook Hook();
  // One line for the start-up log, e.g. "fault injection: eio on read 40 of layer.1".
  std::string Describe() const;

 private:
  struct Target {
    Fault fault;
    uint64_t extent_offset = 0;  // file offset of the extent's first byte
    uint64_t flip_offset = 0;    // kBitFlip: the byte whose low bit is flipped
    int reads_seen = 0;
  };

  int64_t OnRead(uint64_t file_offset, int64_t result);
  void FlipBit(const Target& target);

  std::vector<Target> targets_;
  bool short_reads_ = false;
  bool eagain_ = false;
  std::unordered_map<uint64_t, bool> faulted_last_time_;  // by chunk offset: short and eagain
  std::string weights_path_;
  int copy_fd_ = -1;  // the memfd holding the private copy, when there is a bit flip
};

}  // namespace zinf::cli
