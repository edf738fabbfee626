// MeasureDiskRead: extents of 64 MiB laid over the file and read back to back, two buffers in
// flight, as the streamer does with prefetch depth 1.
#include "io/disk_probe.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "engine/error.h"
#include "io/aligned_buffer.h"
#include "io/extent_reader.h"

namespace zinf::io {

namespace {
constexpr uint64_t kPieceBytes = 64ull << 20;
}  // namespace

DiskReadRate MeasureDiskRead(const std::string& path, uint64_t max_bytes) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0)
    Fail("{}: cannot measure its read rate: it does not exist", path);
  // Whole 4 KiB blocks only, so every piece is a valid O_DIRECT read.
  const uint64_t length =
      std::min<uint64_t>(info.st_size, max_bytes) / kExtentAlignment * kExtentAlignment;
  if (length == 0) Fail("{}: too small to measure a read rate", path);

  std::vector<AlignedBuffer> buffers;
  std::vector<std::span<std::byte>> spans;
  for (int i = 0; i < 2; ++i) {
    buffers.emplace_back(std::min(kPieceBytes, length), PageLock::kNone);
    spans.push_back(buffers.back().span());
  }
  ExtentReader reader(path, spans, ReaderOptions{});
  std::vector<ExtentInfo> pieces;
  for (uint64_t offset = 0; offset < length; offset += kPieceBytes) {
    ExtentInfo piece;
    piece.name = "probe";
    piece.offset = offset;
    piece.size_bytes = std::min(kPieceBytes, length - offset);
    piece.padded_bytes = piece.size_bytes;
    pieces.push_back(piece);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<ReadTicket> tickets(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i >= 2) reader.WaitFor(tickets[i - 2]);  // its buffer is needed again
    tickets[i] = reader.Submit(pieces[i], static_cast<int>(i % 2));
  }
  for (size_t i = pieces.size() >= 2 ? pieces.size() - 2 : 0; i < pieces.size(); ++i) {
    reader.WaitFor(tickets[i]);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {length / seconds / 1e9, length, reader.direct_io()};
}

}  // namespace zinf::io
