// ExtentReader: chunked reads with bounded queue depth through io_uring or the pread pool, reaped
// and refilled on a completion thread; retries, buffered fallback, and blaming failures on a file
// changed mid-run.
#include "io/extent_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "engine/error.h"
#include "io/background_thread.h"

namespace zinf::io {
namespace {

// io_uring refuses to register a single buffer above 1 GiB.
constexpr uint64_t kMaxRegisteredBufferBytes = 1ull << 30;
// A submit refused for want of kernel memory (-EAGAIN) or with completions backed up (-EBUSY) is
// retried this often, a millisecond apart, before the reader gives up.
constexpr int kSubmitRetries = 1000;

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

ExtentReader::ExtentReader(std::string path, std::vector<std::span<std::byte>> buffers,
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
  identity_ = IdentityOf(file_stat);
  try {
    SetUpBackend();
    StartCompletionThread();
  } catch (...) {
    if (ring_ != nullptr) io_uring_queue_exit(ring_.get());
    pool_.reset();
    close(fd_);
    throw;
  }
}

ExtentReader::~ExtentReader() {
  // The kernel (or a pool thread) may still write into the caller's buffers: wait for every read
  // before they go.
  WaitUntilIdle();
  StopCompletionThread();
  if (ring_ != nullptr) {
    if (buffers_registered_) io_uring_unregister_buffers(ring_.get());
    io_uring_queue_exit(ring_.get());
  }
  pool_.reset();  // joins its threads before the descriptors they read go
  if (fd_ >= 0) close(fd_);
  if (direct_fd_ >= 0) close(direct_fd_);
}

void ExtentReader::OpenFile(bool direct) {
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

void ExtentReader::SetUpBackend() {
  const char* env = std::getenv(kIoBackendEnv);
  const std::string_view forced = env != nullptr ? env : "";
  if (!forced.empty() && forced != "auto" && forced != "pread" && forced != "io_uring") {
    Fail("{}={}: not one of auto, io_uring, pread", kIoBackendEnv, forced);
  }
  if (forced == "pread") {
    backend_reason_ = fmt::format("{}=pread", kIoBackendEnv);
  } else if (!options_.use_io_uring && forced != "io_uring") {
    backend_reason_ = "io_uring turned off by the caller";
  } else if (!SetUpRing()) {
    if (forced == "io_uring") {
      Fail("{}=io_uring but io_uring is refused for weights file {} ({})", kIoBackendEnv, path_,
           backend_reason_);
    }
    spdlog::warn("{} (disabled by sysctl or seccomp?); reading {} with {} pread threads",
                 backend_reason_, path_, options_.pread_threads);
  }
  if (ring_ == nullptr) pool_ = std::make_unique<PreadPool>(options_.pread_threads);
}

bool ExtentReader::SetUpRing() {
  ring_ = std::make_unique<io_uring>();
  // No setup flags: SQPOLL would burn a core (and needs privileges on older kernels) for one
  // submission per MiB, and IOPOLL only works with O_DIRECT on polled NVMe queues, which would
  // break the buffered fallback. The completion queue (twice the ring) always has room for every
  // read in flight plus the destructor's wake-up, so it never overflows.
  const int init_result = io_uring_queue_init(options_.queue_depth, ring_.get(), 0);
  if (init_result < 0) {
    backend_reason_ = fmt::format("io_uring unavailable: {}", std::strerror(-init_result));
    ring_.reset();
    return false;
  }
  // Fixed buffers save the kernel pinning the pages on every read. Registration is refused above
  // 1 GiB per buffer and, without CAP_IPC_LOCK, beyond RLIMIT_MEMLOCK: then read unregistered.
  const bool all_fit = std::all_of(buffers_.begin(), buffers_.end(), [](const auto& buffer) {
    return buffer.size() <= kMaxRegisteredBufferBytes;
  });
  if (buffers_.empty() || !all_fit) return true;
  std::vector<iovec> iovecs;
  for (const std::span<std::byte>& buffer : buffers_) {
    iovecs.push_back({buffer.data(), buffer.size()});
  }
  const int register_result =
      io_uring_register_buffers(ring_.get(), iovecs.data(), static_cast<unsigned>(iovecs.size()));
  if (register_result < 0) {
    spdlog::info("{}: io_uring buffer registration refused ({}); using unregistered reads", path_,
                 std::strerror(-register_result));
    return true;
  }
  buffers_registered_ = true;
  return true;
}

void ExtentReader::StartCompletionThread() {
  try {
    completion_thread_ = StartBackgroundThread([this] { CompletionLoop(); });
  } catch (const std::system_error& error) {
    Fail("cannot start the thread that reaps reads of weights file {}: {}", path_, error.what());
  }
}

void ExtentReader::StopCompletionThread() {
  {
    // A read with no chunk behind it is the signal to stop: a no-op on the ring, an empty read in
    // the pool. Sent once every real read has completed, so it is the last completion.
    const std::lock_guard<std::mutex> lock(mutex_);
    if (pool_ != nullptr) {
      pool_->Submit({-1, nullptr, 0, 0, nullptr});
    } else if (!reaper_exited_) {
      io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
      try {
        if (sqe == nullptr) Fail("no free ring entry for the stop signal");
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data(sqe, nullptr);
        FlushRing();
      } catch (const Error& error) {
        // Only after the ring failed as a whole. Joining would hang, and leaving would let the
        // thread outlive the reader: neither is safe.
        spdlog::critical("{}: cannot stop the completion thread: {}", path_, error.what());
        std::abort();
      }
    }
  }
  completion_thread_.join();
}

bool ExtentReader::direct_io() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return direct_io_;
}

uint64_t ExtentReader::bytes_read() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return bytes_read_;
}

double ExtentReader::busy_seconds() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!busy_since_) return busy_seconds_;
  return busy_seconds_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - *busy_since_).count();
}

void ExtentReader::NoteBusyState() {
  const bool busy = in_flight_ > 0 || !queued_.empty();
  if (busy && !busy_since_) {
    busy_since_ = std::chrono::steady_clock::now();
  } else if (!busy && busy_since_) {
    busy_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *busy_since_).count();
    busy_since_.reset();
  }
}

std::string ExtentReader::DescribeBackend() const {
  if (ring_ != nullptr) {
    return buffers_registered_ ? "io_uring with registered buffers" : "io_uring";
  }
  return fmt::format("{} pread threads ({})", pool_->num_threads(), backend_reason_);
}

std::optional<std::string> ExtentReader::FileChangedError(const std::string& failure) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return ChangedError(failure);
}

std::optional<std::string> ExtentReader::ChangedError(const std::string& failure) const {
  const std::optional<std::string> change = DescribeChange(path_, fd_, identity_);
  if (!change) return std::nullopt;
  return fmt::format("weights file {} changed while zinf was running ({}) — rerun once nothing "
                     "writes it; {}",
                     path_, *change, failure);
}

void ExtentReader::FallBackToBuffered(const std::string& reason) {
  if (!direct_io_) return;
  spdlog::info("{}: O_DIRECT read refused ({}); reading through the page cache", path_, reason);
  const int buffered_fd = OpenOrFail(path_, O_RDONLY | O_CLOEXEC);
  direct_fd_ = fd_;  // reads in flight may still name it; closed in the destructor
  fd_ = buffered_fd;
  direct_io_ = false;
}

ReadTicket ExtentReader::Submit(const ExtentInfo& extent, int buffer_idx) {
  ZINF_CHECK(buffer_idx >= 0 && static_cast<size_t>(buffer_idx) < buffers_.size(),
             "buffer {} out of range ({} buffers)", buffer_idx, buffers_.size());
  const std::span<std::byte> buffer = buffers_[buffer_idx];
  ZINF_CHECK(extent.padded_bytes <= buffer.size(),
             "{} ({} bytes) does not fit buffer {} ({} bytes)", DescribeExtent(extent),
             extent.padded_bytes, buffer_idx, buffer.size());
  ZINF_CHECK(extent.size_bytes <= extent.padded_bytes, "{}: size exceeds padded size",
             DescribeExtent(extent));

  const std::lock_guard<std::mutex> lock(mutex_);
  const ReadTicket ticket = next_ticket_++;
  TicketState& state = tickets_[ticket];
  state.extent_label = DescribeExtent(extent);
  state.extent_offset = extent.offset;
  state.extent_end = extent.offset + extent.size_bytes;
  state.padded_bytes = extent.padded_bytes;
  state.chunk_done.assign((extent.padded_bytes + options_.chunk_bytes - 1) / options_.chunk_bytes,
                          false);
  for (uint64_t start = 0; start < extent.padded_bytes; start += options_.chunk_bytes) {
    auto chunk = std::make_unique<Chunk>();
    chunk->index = start / options_.chunk_bytes;
    chunk->ticket = ticket;
    chunk->buffer_idx = buffer_idx;
    chunk->dest = buffer.data() + start;
    chunk->file_offset = extent.offset + start;
    chunk->length = std::min(options_.chunk_bytes, extent.padded_bytes - start);
    chunk->content_end = state.extent_end;
    queued_.push_back(std::move(chunk));
    ++state.chunks_left;
  }
  NoteBusyState();
  SubmitQueued();
  return ticket;
}

void ExtentReader::WaitFor(ReadTicket ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  ZINF_CHECK(tickets_.contains(ticket), "read ticket {} unknown or already waited for", ticket);
  progress_.wait(lock, [&] { return tickets_.at(ticket).chunks_left == 0 || broken_; });
  auto found = tickets_.find(ticket);
  if (found->second.chunks_left > 0) throw Error(*broken_);
  std::optional<std::string> error = std::move(found->second.error);
  tickets_.erase(found);
  if (error) throw Error(*error);
}

uint64_t ExtentReader::WaitForBytes(ReadTicket ticket, uint64_t beyond) {
  std::unique_lock<std::mutex> lock(mutex_);
  ZINF_CHECK(tickets_.contains(ticket), "read ticket {} unknown or already waited for", ticket);
  const TicketState& state = tickets_.at(ticket);
  const auto landed = [&] {
    return state.chunks_left == 0
               ? state.padded_bytes
               : std::min<uint64_t>(state.done_prefix * options_.chunk_bytes, state.padded_bytes);
  };
  progress_.wait(lock, [&] { return landed() > beyond || state.chunks_left == 0 || broken_; });
  if (state.chunks_left > 0 && landed() <= beyond) throw Error(*broken_);
  return landed();
}

bool ExtentReader::IsDone(ReadTicket ticket) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto found = tickets_.find(ticket);
  ZINF_CHECK(found != tickets_.end(), "read ticket {} unknown or already waited for", ticket);
  return found->second.chunks_left == 0;
}

ExtentReader::ChunkOutcome ExtentReader::OnResult(Chunk& chunk, int64_t result) {
  if (options_.fault_hook) result = options_.fault_hook(chunk.file_offset, chunk.length, result);
  TicketState& state = tickets_.at(chunk.ticket);
  if (state.error) return ChunkOutcome::kDone;  // the extent already failed; drop the rest
  if (result == -EAGAIN || result == -EINTR) return ChunkOutcome::kRequeue;
  if (result == -EINVAL && chunk.sent_direct) {  // the first of several in flight falls back
    FallBackToBuffered(
        fmt::format("EINVAL reading {} at byte {}", state.extent_label, chunk.file_offset));
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
    const std::string found_end = fmt::format(
        "{} needs bytes [{}, {}) but the file ends at byte {} (a read at byte {} found "
        "its end)",
        state.extent_label, state.extent_offset, state.extent_end, file_size, chunk.file_offset);
    // At open the file held every extent (the weight source checks), so usually it shrank since.
    state.error = ChangedError(found_end).value_or(fmt::format(
        "weights file {} is truncated: {}; the file is incomplete — copy or convert it again",
        path_, found_end));
    return ChunkOutcome::kDone;
  }
  return ChunkOutcome::kRequeue;
}

void ExtentReader::FinishChunk(const Chunk& chunk) {
  TicketState& state = tickets_.at(chunk.ticket);
  ZINF_CHECK(state.chunks_left > 0, "chunk finished twice for ticket {}", chunk.ticket);
  --state.chunks_left;
  state.chunk_done[chunk.index] = true;
  while (state.done_prefix < state.chunk_done.size() && state.chunk_done[state.done_prefix]) {
    ++state.done_prefix;
  }
}

void ExtentReader::SubmitQueued() {
  unsigned prepared = 0;
  while (in_flight_ < options_.queue_depth && !queued_.empty()) {
    std::unique_ptr<Chunk>& next = queued_.front();
    if (tickets_.at(next->ticket).error) {  // its extent failed: no point reading the rest
      FinishChunk(*next);
      queued_.pop_front();
      continue;
    }
    next->sent_direct = direct_io_;
    if (pool_ != nullptr) {
      pool_->Submit({fd_, next->dest, next->length, next->file_offset, next.get()});
      next.release();  // the pool's completion carries it back to OnCompletion
      queued_.pop_front();
      ++in_flight_;
      continue;
    }
    // The ring has queue_depth entries and no more than that many reads fly, so one is free.
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
    ZINF_CHECK(sqe != nullptr, "io_uring full with {} reads in flight", in_flight_);
    Chunk* chunk = next.release();
    queued_.pop_front();
    const auto length = static_cast<unsigned>(chunk->length);
    if (buffers_registered_) {
      io_uring_prep_read_fixed(sqe, fd_, chunk->dest, length, chunk->file_offset,
                               chunk->buffer_idx);
    } else {
      io_uring_prep_read(sqe, fd_, chunk->dest, length, chunk->file_offset);
    }
    io_uring_sqe_set_data(sqe, chunk);
    ++in_flight_;
    ++prepared;
  }
  if (prepared > 0) FlushRing();
}

void ExtentReader::FlushRing() {
  // The completion thread only waits for completions: entries left in the ring would never be
  // sent, so a refused submit is retried here until the kernel takes them.
  for (int attempt = 0;; ++attempt) {
    const int submit_result = io_uring_submit(ring_.get());
    if (submit_result >= 0 && io_uring_sq_ready(ring_.get()) == 0) return;
    if (submit_result == -EINTR) continue;
    if (submit_result < 0 && submit_result != -EAGAIN && submit_result != -EBUSY) {
      Fail("io_uring submit for weights file {} failed: {}", path_, std::strerror(-submit_result));
    }
    if (attempt == kSubmitRetries) {
      Fail("io_uring submit for weights file {} kept being refused ({}) for {} tries", path_,
           std::strerror(submit_result < 0 ? -submit_result : EAGAIN), kSubmitRetries);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void ExtentReader::CompletionLoop() {
  while (true) {
    Chunk* chunk = nullptr;
    int64_t result = 0;
    if (ring_ != nullptr) {
      io_uring_cqe* cqe = nullptr;
      const int wait_result = io_uring_wait_cqe(ring_.get(), &cqe);
      if (wait_result == -EINTR || wait_result == -EAGAIN) continue;
      if (wait_result < 0) {
        const std::lock_guard<std::mutex> lock(mutex_);
        broken_ = fmt::format("waiting for reads of weights file {} failed: {}", path_,
                              std::strerror(-wait_result));
        reaper_exited_ = true;
        progress_.notify_all();
        return;
      }
      chunk = static_cast<Chunk*>(io_uring_cqe_get_data(cqe));
      result = cqe->res;
      io_uring_cqe_seen(ring_.get(), cqe);
    } else {
      const PreadCompletion completion = pool_->WaitOne();
      chunk = static_cast<Chunk*>(completion.user_data);
      result = completion.result;
    }
    if (chunk == nullptr) return;  // StopCompletionThread's signal
    const std::lock_guard<std::mutex> lock(mutex_);
    OnCompletion(std::unique_ptr<Chunk>(chunk), result);
    progress_.notify_all();
  }
}

void ExtentReader::OnCompletion(std::unique_ptr<Chunk> chunk, int64_t result) {
  --in_flight_;
  const ReadTicket ticket = chunk->ticket;
  try {
    if (OnResult(*chunk, result) == ChunkOutcome::kRequeue && !stopping_) {
      queued_.push_front(std::move(chunk));  // first in line: it holds up its extent
    } else {
      FinishChunk(*chunk);
    }
  } catch (const std::exception& error) {  // e.g. the buffered fallback could not reopen the file
    TicketState& state = tickets_.at(ticket);
    if (!state.error) state.error = error.what();
    if (chunk != nullptr) FinishChunk(*chunk);
  }
  try {
    SubmitQueued();
  } catch (const std::exception& error) {  // the ring itself failed: nothing more can be read
    broken_ = error.what();
  }
  NoteBusyState();
}

void ExtentReader::WaitUntilIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  queued_.clear();  // never sent: nothing writes their buffers
  progress_.wait(lock, [&] { return in_flight_ == 0 || reaper_exited_; });
  // Only when the ring failed as a whole; the kernel holds the pages of O_DIRECT reads until they end.
  if (in_flight_ > 0) spdlog::error("{}: {} reads still in flight at shutdown", path_, in_flight_);
}

}  // namespace zinf::io
