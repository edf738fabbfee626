// ExtentReader: chunked reads, -EAGAIN and short-read recovery, I/O errors and truncation at read time.
#include "io/extent_reader.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "engine/error.h"
#include "io/aligned_buffer.h"
#include "tests/io/io_backends.h"
#include "tests/io/synthetic_weights.h"

namespace zinf::io {
namespace {

using Catch::Matchers::Contains;
using namespace std::chrono_literals;
using testing::IoBackend;
using testing::SyntheticWeights;
using testing::UseIoBackend;

constexpr IoBackend kAllBackends[] = {IoBackend::kIoUring, IoBackend::kPreadOption,
                                      IoBackend::kPreadForcedByEnv};

// Reads every extent of `weights` into its own buffer (all in flight at once) and compares; returns
// the bytes the reader fetched.
uint64_t ReadAllAndCompare(const SyntheticWeights& weights, const ReaderOptions& options,
                           IoBackend backend) {
  std::vector<AlignedBuffer> buffers;
  std::vector<std::span<std::byte>> spans;
  for (const ExtentInfo& extent : weights.checkpoint.extents) {
    buffers.emplace_back(extent.padded_bytes, PageLock::kNone);
    spans.push_back(buffers.back().span());
  }
  ExtentReader reader(weights.path(), spans, options);
  if (testing::UsesPreadPool(backend)) REQUIRE_FALSE(reader.uses_io_uring());
  std::vector<ReadTicket> tickets;
  for (size_t idx = 0; idx < buffers.size(); ++idx) {
    tickets.push_back(reader.Submit(weights.checkpoint.extents[idx], static_cast<int>(idx)));
  }
  for (size_t idx = buffers.size(); idx-- > 0;) {  // out of order on purpose
    reader.WaitFor(tickets[idx]);
    INFO("extent " << idx);
    REQUIRE(std::memcmp(buffers[idx].data(), weights.contents[idx].data(),
                        weights.contents[idx].size()) == 0);
  }
  return reader.bytes_read();
}

TEST_CASE("ExtentReader recovers from -EAGAIN and short reads", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  ReaderOptions options;
  const IoBackend backend = GENERATE(from_range(std::begin(kAllBackends), std::end(kAllBackends)));
  const UseIoBackend use_backend(backend, options);
  options.allow_direct_io = GENERATE(true, false);
  options.queue_depth = GENERATE(1u, 4u);
  options.chunk_bytes = GENERATE(uint64_t{4096}, uint64_t{1} << 20);
  INFO(backend << ", direct " << options.allow_direct_io << ", queue depth " << options.queue_depth
               << ", chunk " << options.chunk_bytes);

  SECTION("clean reads") {
    CHECK(ReadAllAndCompare(weights, options, backend) == weights.file_bytes_per_pass());
  }
  SECTION("every first attempt at an offset fails with -EAGAIN or comes back short") {
    std::map<uint64_t, int> attempts;
    int faults_injected = 0;
    options.fault_hook = [&](uint64_t file_offset, uint64_t length, int64_t result) -> int64_t {
      const int attempt = attempts[file_offset]++;
      if (attempt > 0 || result < 2) return result;  // never fake an end of file
      ++faults_injected;
      if (file_offset / 4096 % 2 == 0) return -EAGAIN;
      // Short by a block-aligned amount where possible, so O_DIRECT can carry on from there.
      return length > 4096 ? static_cast<int64_t>(length / 2 / 4096 * 4096) : result / 2;
    };
    // A short read that ends in an extent's padding completes it: padding is never re-read.
    CHECK(ReadAllAndCompare(weights, options, backend) <= weights.file_bytes_per_pass());
    CHECK(faults_injected > 0);
  }
}

TEST_CASE("ExtentReader reads a submitted extent to the end while its caller does other work",
          "[io]") {
  // What prefetching relies on: with 2 of the extent's 770 chunk reads in flight at a time, the
  // reader's own thread must keep sending the rest; nothing here waits on the reader.
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  ReaderOptions options;
  const IoBackend backend = GENERATE(from_range(std::begin(kAllBackends), std::end(kAllBackends)));
  const UseIoBackend use_backend(backend, options);
  INFO(backend);
  options.queue_depth = 2;
  options.chunk_bytes = 4096;
  const ExtentInfo& layer = weights.checkpoint.extents[1];  // 3 MiB + 17 bytes
  AlignedBuffer buffer(layer.padded_bytes, PageLock::kNone);
  ExtentReader reader(weights.path(), {buffer.span()}, options);
  CHECK(reader.busy_seconds() == 0);
  const auto start = std::chrono::steady_clock::now();
  const ReadTicket ticket = reader.Submit(layer, 0);
  while (!reader.IsDone(ticket) && std::chrono::steady_clock::now() - start < 20s) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(reader.IsDone(ticket));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(reader.bytes_read() == layer.padded_bytes);
  // Busy only while reads were pending: not before Submit, not once they all finished.
  const double busy = reader.busy_seconds();
  CHECK(busy > 0);
  CHECK(busy <= elapsed);
  std::this_thread::sleep_for(20ms);
  CHECK(reader.busy_seconds() == busy);
  reader.WaitFor(ticket);
  CHECK(std::memcmp(buffer.data(), weights.contents[1].data(), weights.contents[1].size()) == 0);
}

TEST_CASE("ExtentReader says how much of an extent has landed from its start, gap-free", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  ReaderOptions options;
  const IoBackend backend = GENERATE(from_range(std::begin(kAllBackends), std::end(kAllBackends)));
  const UseIoBackend use_backend(backend, options);
  INFO(backend);
  const ExtentInfo& layer = weights.checkpoint.extents[1];  // 3 MiB + 17: four 1 MiB chunks
  const uint64_t held_offset = layer.offset + (1u << 20);   // the second chunk
  std::atomic<bool> release{false};
  options.fault_hook = [&](uint64_t file_offset, uint64_t, int64_t result) -> int64_t {
    return file_offset == held_offset && !release ? -EAGAIN : result;  // retried until released
  };
  AlignedBuffer buffer(layer.padded_bytes, PageLock::kNone);
  ExtentReader reader(weights.path(), {buffer.span()}, options);
  const ReadTicket ticket = reader.Submit(layer, 0);
  // The first chunk lands; the held second one stops the count there, whatever lands after it.
  CHECK(reader.WaitForBytes(ticket, 0) == (1u << 20));
  CHECK(std::memcmp(buffer.data(), weights.contents[1].data(), 1u << 20) == 0);
  release = true;
  uint64_t landed = 1u << 20;
  while (landed < layer.padded_bytes) {
    const uint64_t now = reader.WaitForBytes(ticket, landed);
    REQUIRE(now > landed);
    REQUIRE((now % (1u << 20) == 0 || now == layer.padded_bytes));
    landed = now;
    const uint64_t content = std::min<uint64_t>(landed, layer.size_bytes);
    REQUIRE(std::memcmp(buffer.data(), weights.contents[1].data(), content) == 0);
  }
  CHECK(reader.WaitForBytes(ticket, layer.padded_bytes) == layer.padded_bytes);  // ended: at once
  CHECK_NOTHROW(reader.WaitFor(ticket));
}

TEST_CASE("ExtentReader reads through a pread pool that could start no thread", "[io]") {
  // A thread limit can leave the pool with none: Submit then reads inline, and the completion
  // thread must still be woken for each read.
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  ReaderOptions options;
  options.use_io_uring = false;
  options.pread_threads = 0;
  options.queue_depth = 2;
  const testing::ScopedEnv env(kIoBackendEnv, std::nullopt);
  CHECK(ReadAllAndCompare(weights, options, IoBackend::kPreadOption) ==
        weights.file_bytes_per_pass());
}

TEST_CASE("ExtentReader reports I/O errors and truncation with file, extent and offset", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  ReaderOptions options;
  const IoBackend backend = GENERATE(from_range(std::begin(kAllBackends), std::end(kAllBackends)));
  const UseIoBackend use_backend(backend, options);
  INFO(backend);
  const ExtentInfo& layer = weights.checkpoint.extents[1];  // 3 MiB + 17: four 1 MiB chunks
  AlignedBuffer buffer(layer.padded_bytes, PageLock::kNone);

  SECTION("-EIO in the third chunk") {
    const uint64_t failing_offset = layer.offset + (2u << 20);
    options.fault_hook = [&](uint64_t file_offset, uint64_t, int64_t result) -> int64_t {
      return file_offset == failing_offset ? -EIO : result;
    };
    ExtentReader reader(weights.path(), {buffer.span()}, options);
    const ReadTicket ticket = reader.Submit(layer, 0);
    CHECK_THROWS_WITH(reader.WaitFor(ticket),
                      Contains("extent layer.0 (layer 0)") && Contains(weights.path()) &&
                          Contains("at byte " + std::to_string(failing_offset)) &&
                          Contains(std::strerror(EIO)));
    // The reader is still usable after a failed read.
    options.fault_hook = nullptr;
    const ReadTicket again = reader.Submit(weights.checkpoint.extents[0], 0);
    reader.WaitFor(again);
    CHECK(std::memcmp(buffer.data(), weights.contents[0].data(), weights.contents[0].size()) == 0);
  }
  SECTION("the file ends inside an extent's tensors") {
    const uint64_t new_size = layer.offset + (1u << 20) + 5;
    std::filesystem::resize_file(weights.path(), new_size);
    ExtentReader reader(weights.path(), {buffer.span()}, options);
    CHECK(reader.file_size_bytes() == new_size);
    const ReadTicket ticket = reader.Submit(layer, 0);
    CHECK_THROWS_WITH(reader.WaitFor(ticket),
                      Contains("truncated") && Contains("extent layer.0 (layer 0)") &&
                          Contains(weights.path()) &&
                          Contains("ends at byte " + std::to_string(new_size)));
  }
  SECTION("the file is truncated after the reader opened it") {
    ExtentReader reader(weights.path(), {buffer.span()}, options);
    const uint64_t old_size = reader.file_size_bytes();
    const uint64_t new_size = layer.offset + (1u << 20) + 5;
    std::filesystem::resize_file(weights.path(), new_size);
    const ReadTicket ticket = reader.Submit(layer, 0);
    CHECK_THROWS_WITH(reader.WaitFor(ticket),
                      Contains(weights.path() + " changed while zinf was running (size " +
                               std::to_string(old_size) + " → " + std::to_string(new_size) +
                               " bytes)") &&
                          Contains("rerun") && Contains("extent layer.0 (layer 0)") &&
                          Contains("ends at byte " + std::to_string(new_size)));
  }
  SECTION("a missing file") {
    CHECK_THROWS_WITH(ExtentReader(weights.path() + ".missing", {buffer.span()}, options),
                      Contains(weights.path() + ".missing") && Contains("cannot open"));
  }
}

TEST_CASE("ZINF_IO_BACKEND chooses how to read, and the reader says which and why", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  AlignedBuffer buffer(weights.checkpoint.extents[0].padded_bytes, PageLock::kNone);
  ReaderOptions options;
  SECTION("pread overrides options that ask for io_uring") {
    const testing::ScopedEnv env(kIoBackendEnv, "pread");
    const ExtentReader reader(weights.path(), {buffer.span()}, options);
    CHECK_FALSE(reader.uses_io_uring());
    CHECK(reader.DescribeBackend() == "4 pread threads (ZINF_IO_BACKEND=pread)");
  }
  SECTION("auto keeps the options' choice") {
    const testing::ScopedEnv env(kIoBackendEnv, "auto");
    options.use_io_uring = false;
    options.pread_threads = 3;
    const ExtentReader reader(weights.path(), {buffer.span()}, options);
    CHECK(reader.DescribeBackend() == "3 pread threads (io_uring turned off by the caller)");
  }
  SECTION("io_uring is used where the kernel allows it") {
    const testing::ScopedEnv env(kIoBackendEnv, "io_uring");
    options.use_io_uring = false;  // the environment wins
    const ExtentReader reader(weights.path(), {buffer.span()}, options);
    CHECK(reader.uses_io_uring());
    CHECK(reader.DescribeBackend().starts_with("io_uring"));
  }
  SECTION("an unknown value is an error naming the variable") {
    const testing::ScopedEnv env(kIoBackendEnv, "threads");
    CHECK_THROWS_WITH(ExtentReader(weights.path(), {buffer.span()}, options),
                      Contains("ZINF_IO_BACKEND=threads") && Contains("auto, io_uring, pread"));
  }
}

TEST_CASE("AlignedBuffer is page-aligned, rounded up, zeroed and movable", "[io]") {
  const PageLock lock = GENERATE(PageLock::kNone, PageLock::kTryLock);
  AlignedBuffer buffer(5000, lock);
  REQUIRE(reinterpret_cast<uintptr_t>(buffer.data()) % kBufferAlignment == 0);
  CHECK(buffer.size_bytes() == 8192);
  for (uint64_t idx = 0; idx < buffer.size_bytes(); ++idx)
    REQUIRE(buffer.data()[idx] == std::byte{0});
  std::byte* const data = buffer.data();
  AlignedBuffer moved = std::move(buffer);
  CHECK(moved.data() == data);
  CHECK(buffer.empty());
  CHECK(AlignedBuffer(0, PageLock::kNone).empty());
  CHECK(RoundUpToAlignment(4096) == 4096);
  CHECK(RoundUpToAlignment(4097) == 8192);
  CHECK_THROWS_AS(RoundUpToAlignment(~uint64_t{0}), Error);
}

}  // namespace
}  // namespace zinf::io
