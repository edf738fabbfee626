// UringReader: chunked io_uring reads with bounded queue depth, retries, and pread/buffered fallbacks.
#include "io/uring_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/error.h"

namespace zinf::io {
namespace {

// io_uring refuses to register a single buffer above 1 GiB.
constexpr uint64_t kMaxRegisteredBufferBytes = 1ull << 30;

int OpenOrFail(const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags);
  if (fd < 0 && !(errno == EINVAL && (flags & O_DIRECT))) {
    Fail("cannot open weights file {}: {}", path, std::strerror(errno));
  }
  return fd;
}

}  // namespace

std::string DescribeExtent(const ExtentInfo& extent) {
  if (extent.kind == ExtentKind::kLayer) {
    return fmt::format("extent {} (layer {})", extent.name, extent.layer);
  }
  return fmt::format("extent {}", extent.name);
}

UringReader::UringReader(std::string path, std::vector<std::span<std::byte>> buffers,
                         const ReaderOptions& options)
    : path_(std::move(path)), buffers_(std::move(buffers)), options_(options) {
  ZINF_CHECK(options_.queue_depth > 0, "queue depth must be positive");
  // A chunk is one read: its length must fit the SQE's 32-bit length; 1 GiB is far beyond useful.
  ZINF_CHECK(options_.chunk_bytes > 0 && options_.chunk_bytes % kExtentAlignment == 0 &&
                 options_.chunk_bytes <= kMaxRegisteredBufferBytes,
             "chunk size {} is not a positive multiple of {} up to 1 GiB", options_.chunk_bytes,
             kExtentAlignment);
  for (const std::span<std::byte>& buffer : buffers_) {
    ZINF_CHECK(!buffer.empty() && reinterpret_cast<uintptr_t>(buffer.data()) % 4096 == 0,
               "read buffers must be non-empty and 4096-aligned");
  }
  OpenFile(options_.allow_direct_io);
  struct stat file_stat {};
  if (fstat(fd_, &file_stat) != 0) {
    const int error_number = errno;
    close(fd_);
    Fail("cannot stat weights file {}: {}", path_, std::strerror(error_number));
  }
  file_size_bytes_ = static_cast<uint64_t>(file_stat.st_size);
  SetUpRing(options_);
}

UringReader::~UringReader() {
  if (ring_ != nullptr) {
    Drain();
    if (buffers_registered_) io_uring_unregister_buffers(ring_.get());
    io_uring_queue_exit(ring_.get());
  }
  if (fd_ >= 0) close(fd_);
  if (direct_fd_ >= 0) close(direct_fd_);
}

void UringReader::OpenFile(bool direct) {
  if (direct) {
    fd_ = OpenOrFail(path_, O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd_ >= 0) {
      direct_io_ = true;
      return;
    }
    spdlog::info("{}: O_DIRECT open refused (EINVAL, e.g. tmpfs); reading through the page cache",
                 path_);
  }
  fd_ = OpenOrFail(path_, O_RDONLY | O_CLOEXEC);
  direct_io_ = false;
}

void UringReader::SetUpRing(const ReaderOptions& options) {
  if (!options.use_io_uring) return;
  ring_ = std::make_unique<io_uring>();
  // No setup flags: SQPOLL would burn a core (and needs privileges on older kernels) for one
  // submission per MiB, and IOPOLL only works with O_DIRECT on polled NVMe queues, which would
  // break the buffered fallback.
  const int init_result = io_uring_queue_init(options.queue_depth, ring_.get(), 0);
  if (init_result < 0) {
    spdlog::warn("io_uring unavailable ({}; disabled by sysctl or seccomp?); reading {} with pread",
                 std::strerror(-init_result), path_);
    ring_.reset();
    return;
  }
  // Fixed buffers save the kernel pinning the pages on every read. Registration is refused above
  // 1 GiB per buffer and, without CAP_IPC_LOCK, beyond RLIMIT_MEMLOCK: then read unregistered.
  const bool all_fit = std::all_of(buffers_.begin(), buffers_.end(), [](const auto& buffer) {
    return buffer.size() <= kMaxRegisteredBufferBytes;
  });
  if (buffers_.empty() || !all_fit) return;
  std::vector<iovec> iovecs;
  for (const std::span<std::byte>& buffer : buffers_) {
    iovecs.push_back({buffer.data(), buffer.size()});
  }
  const int register_result =
      io_uring_register_buffers(ring_.get(), iovecs.data(), static_cast<unsigned>(iovecs.size()));
  if (register_result < 0) {
    spdlog::info("{}: io_uring buffer registration refused ({}); using unregistered reads", path_,
                 std::strerror(-register_result));
    return;
  }
  buffers_registered_ = true;
}

void UringReader::FallBackToBuffered(const std::string& reason) {
  if (!direct_io_) return;
  spdlog::info("{}: O_DIRECT read refused ({}); reading through the page cache", path_, reason);
  direct_fd_ = fd_;  // reads in flight may still name it; closed in the destructor
  fd_ = OpenOrFail(path_, O_RDONLY | O_CLOEXEC);
  direct_io_ = false;
}

ReadTicket UringReader::Submit(const ExtentInfo& extent, int buffer_idx) {
  ZINF_CHECK(buffer_idx >= 0 && static_cast<size_t>(buffer_idx) < buffers_.size(),
             "buffer {} out of range ({} buffers)", buffer_idx, buffers_.size());
  const std::span<std::byte> buffer = buffers_[buffer_idx];
  ZINF_CHECK(extent.padded_bytes <= buffer.size(), "{} ({} bytes) does not fit buffer {} ({} bytes)",
             DescribeExtent(extent), extent.padded_bytes, buffer_idx, buffer.size());
  ZINF_CHECK(extent.size_bytes <= extent.padded_bytes, "{}: size exceeds padded size",
             DescribeExtent(extent));

  const ReadTicket ticket = next_ticket_++;
  TicketState& state = tickets_[ticket];
  state.extent_label = DescribeExtent(extent);
  state.extent_offset = extent.offset;
  state.extent_end = extent.offset + extent.size_bytes;

  std::vector<Chunk> chunks;
  for (uint64_t start = 0; start < extent.padded_bytes; start += options_.chunk_bytes) {
    Chunk chunk;
    chunk.ticket = ticket;
    chunk.buffer_idx = buffer_idx;
    chunk.dest = buffer.data() + start;
    chunk.file_offset = extent.offset + start;
    chunk.length = std::min(options_.chunk_bytes, extent.padded_bytes - start);
    chunk.content_end = state.extent_end;
    chunks.push_back(chunk);
  }
  state.chunks_left = chunks.size();

  if (ring_ == nullptr) {
    for (const Chunk& chunk : chunks) ReadSync(chunk);
    return ticket;
  }
  for (const Chunk& chunk : chunks) queued_.push_back(std::make_unique<Chunk>(chunk));
  SubmitQueued();
  return ticket;
}

void UringReader::WaitFor(ReadTicket ticket) {
  auto found = tickets_.find(ticket);
  ZINF_CHECK(found != tickets_.end(), "read ticket {} unknown or already waited for", ticket);
  while (found->second.chunks_left > 0) ReapOne();
  std::optional<std::string> error = std::move(found->second.error);
  tickets_.erase(found);
  if (error) throw Error(*error);
}

bool UringReader::IsDone(ReadTicket ticket) const {
  auto found = tickets_.find(ticket);
  ZINF_CHECK(found != tickets_.end(), "read ticket {} unknown or already waited for", ticket);
  return found->second.chunks_left == 0;
}

UringReader::ChunkOutcome UringReader::OnResult(Chunk& chunk, int64_t result) {
  if (options_.fault_hook) result = options_.fault_hook(chunk.file_offset, chunk.length, result);
  TicketState& state = tickets_.at(chunk.ticket);
  if (state.error) return ChunkOutcome::kDone;  // the extent already failed; drop the rest
  if (result == -EAGAIN || result == -EINTR) return ChunkOutcome::kRequeue;
  if (result == -EINVAL && chunk.sent_direct) {  // the first of several in flight falls back
    FallBackToBuffered(fmt::format("EINVAL reading {} at byte {}", state.extent_label,
                                   chunk.file_offset));
    return ChunkOutcome::kRequeue;
  }
  if (result < 0) {
    state.error = fmt::format("reading {} of weights file {} at byte {} ({} bytes) failed: {}",
                              state.extent_label, path_, chunk.file_offset, chunk.length,
                              std::strerror(static_cast<int>(-result)));
    return ChunkOutcome::kDone;
  }
  const uint64_t got_bytes = std::min(static_cast<uint64_t>(result), chunk.length);
  bytes_read_ += got_bytes;
  chunk.dest += got_bytes;
  chunk.file_offset += got_bytes;
  chunk.length -= got_bytes;
  if (chunk.length == 0) return ChunkOutcome::kDone;
  // A short read. Ending past the extent's tensors is the file ending inside the last extent's
  // padding, which the converter need not write; anything else is re-read from where it stopped.
  if (chunk.file_offset >= chunk.content_end) return ChunkOutcome::kDone;
  if (got_bytes == 0) {
    struct stat file_stat {};
    const uint64_t file_size = fstat(fd_, &file_stat) == 0 ? file_stat.st_size : chunk.file_offset;
    state.error = fmt::format(
        "weights file {} is truncated: {} needs bytes [{}, {}) but the file ends at byte {} (a "
        "read at byte {} found its end); the file is incomplete — copy or convert it again",
        path_, state.extent_label, state.extent_offset, state.extent_end, file_size,
        chunk.file_offset);
    return ChunkOutcome::kDone;
  }
  return ChunkOutcome::kRequeue;
}

void UringReader::FinishChunk(const Chunk& chunk) {
  TicketState& state = tickets_.at(chunk.ticket);
  ZINF_CHECK(state.chunks_left > 0, "chunk finished twice for ticket {}", chunk.ticket);
  --state.chunks_left;
}

void UringReader::ReadSync(Chunk chunk) {
  while (true) {
    chunk.sent_direct = direct_io_;
    const ssize_t count = pread(fd_, chunk.dest, chunk.length, static_cast<off_t>(chunk.file_offset));
    const int64_t result = count < 0 ? -static_cast<int64_t>(errno) : count;
    if (OnResult(chunk, result) == ChunkOutcome::kDone) break;
  }
  FinishChunk(chunk);
}

void UringReader::SubmitQueued() {
  unsigned prepared = 0;
  while (in_flight_ < options_.queue_depth && !queued_.empty()) {
    std::unique_ptr<Chunk>& next = queued_.front();
    if (tickets_.at(next->ticket).error) {  // its extent failed: no point reading the rest
      FinishChunk(*next);
      queued_.pop_front();
      continue;
    }
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
    if (sqe == nullptr) break;  // the ring is full; ReapOne submits the rest later
    Chunk* chunk = queued_.front().release();
    queued_.pop_front();
    const auto length = static_cast<unsigned>(chunk->length);
    if (buffers_registered_) {
      io_uring_prep_read_fixed(sqe, fd_, chunk->dest, length, chunk->file_offset,
                               chunk->buffer_idx);
    } else {
      io_uring_prep_read(sqe, fd_, chunk->dest, length, chunk->file_offset);
    }
    chunk->sent_direct = direct_io_;
    io_uring_sqe_set_data(sqe, chunk);
    ++in_flight_;
    ++prepared;
  }
  if (prepared == 0) return;
  int submit_result = 0;
  do {
    submit_result = io_uring_submit(ring_.get());
  } while (submit_result == -EINTR);
  // -EAGAIN/-EBUSY leave the entries queued in the ring; io_uring_submit_and_wait sends them later.
  if (submit_result < 0 && submit_result != -EAGAIN && submit_result != -EBUSY) {
    Fail("io_uring submit for weights file {} failed: {}", path_, std::strerror(-submit_result));
  }
}

void UringReader::ReapOne() {
  ZINF_CHECK(in_flight_ > 0, "waiting on io_uring with nothing in flight");
  int wait_result = io_uring_submit_and_wait(ring_.get(), 1);
  if (wait_result == -EINTR) return;
  io_uring_cqe* cqe = nullptr;
  wait_result = io_uring_wait_cqe(ring_.get(), &cqe);
  if (wait_result == -EINTR) return;
  if (wait_result < 0) {
    Fail("waiting for reads of weights file {} failed: {}", path_, std::strerror(-wait_result));
  }
  std::unique_ptr<Chunk> chunk(static_cast<Chunk*>(io_uring_cqe_get_data(cqe)));
  const int64_t result = cqe->res;
  io_uring_cqe_seen(ring_.get(), cqe);
  --in_flight_;
  if (OnResult(*chunk, result) == ChunkOutcome::kRequeue) {
    queued_.push_front(std::move(chunk));  // first in line: it holds up its extent
  } else {
    FinishChunk(*chunk);
  }
  SubmitQueued();
}

void UringReader::Drain() {
  // The kernel may still write into the caller's buffers: wait for every read before they go.
  // Entries a refused submit left in the ring are sent first, or their completions never come.
  io_uring_submit(ring_.get());
  while (in_flight_ > 0) {
    io_uring_cqe* cqe = nullptr;
    const int wait_result = io_uring_wait_cqe(ring_.get(), &cqe);
    if (wait_result == -EINTR) continue;
    if (wait_result < 0) {
      spdlog::error("{}: could not drain io_uring ({})", path_, std::strerror(-wait_result));
      return;
    }
    delete static_cast<Chunk*>(io_uring_cqe_get_data(cqe));
    io_uring_cqe_seen(ring_.get(), cqe);
    --in_flight_;
  }
}

}  // namespace zinf::io
