// Fault injection for tests through the binary; see fault_injection.h.
#include "cmd/fault_injection.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "engine/error.h"

namespace zinf::cli {

namespace {

// A flipped bit lies at most this far into its extent, inside the first 1 MiB chunk the reader
// fetches (ReaderOptions::chunk_bytes), so one chunk read delivers it.
constexpr uint64_t kFlipWindowBytes = 1ull << 20;

Fault ParseOne(std::string_view item) {
  Fault fault;
  const size_t colon = item.find(':');
  const std::string_view kind = item.substr(0, colon);
  if (kind == "short" || kind == "eagain") {
    if (colon != std::string_view::npos) Fail("--fault-inject: '{}' takes no extent", item);
    fault.kind = kind == "short" ? FaultKind::kShortRead : FaultKind::kEagain;
    return fault;
  }
  if (kind != "eio" && kind != "flip") {
    Fail("--fault-inject: unknown fault '{}' (known: short, eagain, eio:EXTENT[@N], "
         "flip:EXTENT[@N])",
         item);
  }
  fault.kind = kind == "eio" ? FaultKind::kEio : FaultKind::kBitFlip;
  if (colon == std::string_view::npos || colon + 1 == item.size()) {
    Fail("--fault-inject: '{}' needs an extent, e.g. {}:layer.0@2", item, kind);
  }
  std::string_view target = item.substr(colon + 1);
  if (const size_t at = target.find('@'); at != std::string_view::npos) {
    const std::string_view count = target.substr(at + 1);
    const auto [end, error] =
        std::from_chars(count.data(), count.data() + count.size(), fault.nth_read);
    if (error != std::errc() || end != count.data() + count.size() || fault.nth_read < 1) {
      Fail("--fault-inject: '{}': the read number after '@' must be an integer >= 1", item);
    }
    target = target.substr(0, at);
  }
  fault.extent = std::string(target);
  return fault;
}

void WriteAll(int fd, const std::byte* data, size_t size, off_t offset, const std::string& what) {
  while (size > 0) {
    const ssize_t written = ::pwrite(fd, data, size, offset);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) Fail("fault injection: cannot write {}: {}", what, std::strerror(errno));
    data += written;
    size -= static_cast<size_t>(written);
    offset += written;
  }
}

// A memfd holding a copy of `path`: tests use small checkpoints, so the copy is cheap.
int CopyIntoMemory(const std::string& path) {
  const int source = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (source < 0) Fail("fault injection: cannot open {}: {}", path, std::strerror(errno));
  const int copy = ::memfd_create("zinf-fault-weights", MFD_CLOEXEC);
  if (copy < 0) {
    ::close(source);
    Fail("fault injection: memfd_create failed: {}", std::strerror(errno));
  }
  std::vector<std::byte> buffer(1 << 20);  // 1 MiB at a time
  for (off_t offset = 0;;) {
    const ssize_t got = ::pread(source, buffer.data(), buffer.size(), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      ::close(source);
      ::close(copy);
      Fail("fault injection: cannot read {}: {}", path, std::strerror(errno));
    }
    if (got == 0) break;
    WriteAll(copy, buffer.data(), static_cast<size_t>(got), offset, "the in-memory copy");
    offset += got;
  }
  ::close(source);
  return copy;
}

}  // namespace

std::vector<Fault> ParseFaultSpec(std::string_view spec) {
  std::vector<Fault> faults;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    if (!item.empty()) faults.push_back(ParseOne(item));
    spec.remove_prefix(comma == std::string_view::npos ? spec.size() : comma + 1);
  }
  if (faults.empty()) Fail("--fault-inject: empty SPEC");
  return faults;
}

FaultInjector::FaultInjector(const Checkpoint& checkpoint, std::vector<Fault> faults)
    : weights_path_(checkpoint.weights_file) {
  bool any_flip = false;
  for (Fault& fault : faults) {
    if (fault.kind == FaultKind::kShortRead) short_reads_ = true;
    if (fault.kind == FaultKind::kEagain) eagain_ = true;
    if (fault.kind != FaultKind::kEio && fault.kind != FaultKind::kBitFlip) continue;
    const ExtentInfo* extent = nullptr;
    std::string names;
    for (const ExtentInfo& candidate : checkpoint.extents) {
      // A layer read in parts (engine/layer_parts.h) is named by its file extent's name too: its
      // attention part starts where that extent does.
      if (candidate.name == fault.extent || candidate.name == fault.extent + ".attention") {
        extent = &candidate;
      }
      names += (names.empty() ? "" : ", ") + candidate.name;
    }
    if (extent == nullptr) {
      Fail("--fault-inject: no extent '{}' in this checkpoint (it has {})", fault.extent, names);
    }
    Target target;
    target.fault = std::move(fault);
    target.extent_offset = extent->offset;
    target.flip_offset = extent->offset + std::min(extent->size_bytes, kFlipWindowBytes) / 2;
    any_flip = any_flip || target.fault.kind == FaultKind::kBitFlip;
    targets_.push_back(std::move(target));
  }
  if (any_flip) {
    copy_fd_ = CopyIntoMemory(checkpoint.weights_file);
    weights_path_ = "/proc/self/fd/" + std::to_string(copy_fd_);
    for (const Target& target : targets_) {
      if (target.fault.kind == FaultKind::kBitFlip && target.fault.nth_read == 1) FlipBit(target);
    }
  }
}

FaultInjector::~FaultInjector() {
  if (copy_fd_ >= 0) ::close(copy_fd_);
}

io::ReadFaultHook FaultInjector::Hook() {
  return [this](uint64_t file_offset, uint64_t /*length*/, int64_t result) {
    return OnRead(file_offset, result);
  };
}

std::string FaultInjector::Describe() const {
  std::string text;
  auto add = [&](const std::string& item) { text += (text.empty() ? "" : "; ") + item; };
  if (short_reads_) add("every chunk read first comes back short");
  if (eagain_) add("every chunk read first fails with EAGAIN");
  for (const Target& target : targets_) {
    add(fmt::format("{} on read {} of {}",
                    target.fault.kind == FaultKind::kEio ? "EIO" : "a flipped bit",
                    target.fault.nth_read, target.fault.extent));
  }
  return "fault injection (testing only): " + text;
}

void FaultInjector::FlipBit(const Target& target) {
  struct stat before {};
  std::byte value{};
  if (::fstat(copy_fd_, &before) != 0 ||
      ::pread(copy_fd_, &value, 1, static_cast<off_t>(target.flip_offset)) != 1) {
    Fail("fault injection: cannot read the in-memory copy: {}", std::strerror(errno));
  }
  value ^= std::byte{0x10};  // any single bit changes the extent's XXH3
  WriteAll(copy_fd_, &value, 1, static_cast<off_t>(target.flip_offset), "the in-memory copy");
  // A flip stands for silent corruption: keep the copy's modified time, or the reader would
  // (rightly) report a file written while zinf ran instead of a checksum mismatch.
  const timespec times[2] = {before.st_atim, before.st_mtim};
  if (::futimens(copy_fd_, times) != 0) {
    Fail("fault injection: cannot restore the in-memory copy's times: {}", std::strerror(errno));
  }
}

int64_t FaultInjector::OnRead(uint64_t file_offset, int64_t result) {
  for (Target& target : targets_) {
    if (target.fault.kind == FaultKind::kEio) {
      // Counts completions of the extent's first chunk: one per read of the extent.
      if (file_offset == target.extent_offset && ++target.reads_seen == target.fault.nth_read) {
        return -EIO;
      }
      continue;
    }
    // A bit flip: count reads that delivered the flipped byte; the copy holds the flip only
    // while the N-th read is the next one to come (reads of one extent never overlap).
    const bool delivered = result > 0 && file_offset <= target.flip_offset &&
                           target.flip_offset < file_offset + static_cast<uint64_t>(result);
    if (!delivered) continue;
    ++target.reads_seen;
    if (target.reads_seen == target.fault.nth_read) FlipBit(target);      // restore
    if (target.reads_seen + 1 == target.fault.nth_read) FlipBit(target);  // flip for the next
  }
  if ((short_reads_ || eagain_) && result >= 2) {  // never fake an end of file
    bool& faulted = faulted_last_time_[file_offset];
    faulted = !faulted;  // every other attempt at an offset: each fault is followed by success
    if (faulted) {
      if (eagain_ && (!short_reads_ || file_offset / 4096 % 2 == 0)) return -EAGAIN;
      // Short by a block-aligned amount where possible, so O_DIRECT can carry on from there.
      const int64_t aligned = result / 2 / 4096 * 4096;
      return aligned > 0 ? aligned : result / 2;
    }
  }
  return result;
}

}  // namespace zinf::cli
