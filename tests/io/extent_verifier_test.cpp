// ExtentVerifier: checks land off the caller's thread, failures reach Wait once, slots are reused.
#include "io/extent_verifier.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "engine/error.h"
#include "io/aligned_buffer.h"
#include "io/tiered_weight_source.h"
#include "tests/io/synthetic_weights.h"

namespace zinf::io {
namespace {

using Catch::Matchers::Contains;
using namespace std::chrono_literals;
using testing::SyntheticWeights;

// One staging buffer per extent, as large as that extent, and a reader over them.
struct Staged {
  std::vector<AlignedBuffer> buffers;
  std::unique_ptr<ExtentReader> reader;

  explicit Staged(const SyntheticWeights& weights, const ReaderOptions& options = {}) {
    std::vector<std::span<std::byte>> spans;
    for (const ExtentInfo& extent : weights.checkpoint.extents) {
      buffers.emplace_back(extent.padded_bytes, PageLock::kNone);
      spans.push_back(buffers.back().span());
    }
    reader = std::make_unique<ExtentReader>(weights.path(), spans, options);
  }
};

// Submits each extent's read into the staging buffer of its index and queues its check in the
// slot of that index.
void EnqueueAll(ExtentVerifier& verifier, Staged& staged, const std::vector<ExtentInfo>& extents) {
  for (size_t idx = 0; idx < extents.size(); ++idx) {
    const int slot = static_cast<int>(idx);
    verifier.Enqueue(slot, staged.reader->Submit(extents[idx], slot), extents[idx],
                     staged.buffers[idx].data());
  }
}

// Polls `hashed` (a checksum_seconds figure) until it is above 0, for at most `limit`.
bool HashedWithin(const std::function<double()>& hashed, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (hashed() == 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST_CASE("ExtentVerifier checks each read on its own thread as the read lands", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  Staged staged(weights);
  const auto& extents = weights.checkpoint.extents;
  ExtentVerifier verifier(*staged.reader, static_cast<int>(extents.size()));
  EnqueueAll(verifier, staged, extents);
  CHECK(verifier.Pending(0));
  // Nobody waits, yet the checks run: the hashing is not the waiting thread's work.
  CHECK(HashedWithin([&] { return verifier.checksum_seconds(); }, 30s));
  for (size_t idx = extents.size(); idx-- > 0;) {  // out of order on purpose
    verifier.Wait(static_cast<int>(idx));
    CHECK_FALSE(verifier.Pending(static_cast<int>(idx)));
  }
  // A slot waited for takes the next job.
  verifier.Enqueue(0, staged.reader->Submit(extents[0], 0), extents[0], staged.buffers[0].data());
  verifier.Wait(0);
  CHECK_THROWS_WITH(verifier.Wait(0), Contains("no check to wait for"));
}

TEST_CASE("ExtentVerifier hands a mismatch to Wait once and stays usable", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const ExtentInfo& corrupted = weights.checkpoint.extents[1];  // layer.0
  testing::FlipByte(weights.path(), corrupted.offset + 7);
  Staged staged(weights);
  const auto& extents = weights.checkpoint.extents;
  ExtentVerifier verifier(*staged.reader, 2);
  verifier.Enqueue(0, staged.reader->Submit(extents[1], 1), extents[1], staged.buffers[1].data());
  verifier.Enqueue(1, staged.reader->Submit(extents[2], 2), extents[2], staged.buffers[2].data());
  CHECK_THROWS_WITH(verifier.Wait(0), Contains("checksum mismatch in extent layer.0 (layer 0)") &&
                                          Contains(weights.path()) && Contains("convert again"));
  CHECK_NOTHROW(verifier.Wait(1));  // the next job is unaffected
  verifier.Enqueue(0, staged.reader->Submit(extents[2], 2), extents[2], staged.buffers[2].data());
  CHECK_NOTHROW(verifier.Wait(0));
}

TEST_CASE("ExtentVerifier reports a failed read as that, not as a mismatch", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const ExtentInfo& layer = weights.checkpoint.extents[1];  // four 1 MiB chunks
  const uint64_t failing_offset = layer.offset + (2u << 20);
  ReaderOptions options;
  options.fault_hook = [&](uint64_t file_offset, uint64_t, int64_t result) -> int64_t {
    return file_offset == failing_offset ? -EIO : result;
  };
  Staged staged(weights, options);
  ExtentVerifier verifier(*staged.reader, 1);
  verifier.Enqueue(0, staged.reader->Submit(layer, 1), layer, staged.buffers[1].data());
  CHECK_THROWS_WITH(verifier.Wait(0), Contains("at byte " + std::to_string(failing_offset)) &&
                                          Contains(std::strerror(EIO)) &&
                                          !Contains("checksum mismatch"));
}

TEST_CASE("ExtentVerifier can be destroyed with checks queued and never waited for", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  Staged staged(weights);
  const auto& extents = weights.checkpoint.extents;
  {
    ExtentVerifier verifier(*staged.reader, static_cast<int>(extents.size()));
    EnqueueAll(verifier, staged, extents);
  }
  // The reader still serves reads afterwards; the dropped jobs' reads were drained or finish.
  const ReadTicket ticket = staged.reader->Submit(extents[0], 0);
  CHECK_NOTHROW(staged.reader->WaitFor(ticket));
}

TEST_CASE("a streamed source's prefetched extent is checked before it is acquired", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  TieredOptions options;
  options.prefetch_depth = 1;
  TieredWeightSource source(
      weights.checkpoint,
      std::vector<WeightPlacement>(weights.checkpoint.extents.size(), WeightPlacement::kStreamed),
      options);
  source.Prefetch(0);
  CHECK(HashedWithin([&] { return source.stats().checksum_seconds; }, 30s));
  CHECK(source.Acquire(0).bytes.size() == weights.contents[0].size());
  source.Release(0);
}

}  // namespace
}  // namespace zinf::io

namespace zinf::io {
namespace {

// Layer 0 of the synthetic weights seen as a layer's part (engine/layer_parts.h): two tensors,
// each under its own checksum, with 64 unchecked bytes between them; the first ends inside the
// reader's second 1 MiB chunk, so a tensor's hash spans chunks and a chunk holds two tensors.
ExtentInfo AsPart(const testing::SyntheticWeights& weights) {
  ExtentInfo part = weights.checkpoint.extents[1];
  part.part = LayerPart::kMlp;
  part.xxh3 = 0;  // a part's extent checksum is not used
  const std::vector<std::byte>& bytes = weights.contents[1];
  const uint64_t first_end = (1u << 20) + 4096, second_begin = first_end + 64;
  TensorInfo first{.name = "ffn_norm", .offset_in_extent = 0, .size_bytes = first_end};
  TensorInfo second{.name = "down",
                    .offset_in_extent = second_begin,
                    .size_bytes = part.size_bytes - second_begin};
  first.xxh3 = XXH3_64bits(bytes.data(), first.size_bytes);
  second.xxh3 = XXH3_64bits(bytes.data() + second_begin, second.size_bytes);
  part.tensors = {first, second};
  return part;
}

TEST_CASE("a layer's part is checked tensor by tensor, naming the tensor that mismatches", "[io]") {
  testing::SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const ExtentInfo part = AsPart(weights);
  const ExtentInfo& layer = weights.checkpoint.extents[1];
  auto check = [&] {
    Staged staged(weights);
    ExtentVerifier verifier(*staged.reader, 1);
    verifier.Enqueue(0, staged.reader->Submit(part, 1), part, staged.buffers[1].data());
    verifier.Wait(0);
  };
  CHECK_NOTHROW(check());
  // The bytes between tensors belong to no tensor: a part's check does not read them.
  testing::FlipByte(weights.path(), layer.offset + (1u << 20) + 4096 + 10);
  CHECK_NOTHROW(check());
  testing::FlipByte(weights.path(), layer.offset + (2u << 20) + 5);
  CHECK_THROWS_WITH(check(), Contains("checksum mismatch in tensor 'down' of extent layer.0") &&
                                 Contains("convert again"));
  // CheckExtentBytes (resident extents) checks a part the same way.
  Staged staged(weights);
  const ReadTicket ticket = staged.reader->Submit(part, 1);
  staged.reader->WaitFor(ticket);
  CHECK_THROWS_WITH(CheckExtentBytes(part, staged.buffers[1].data(), *staged.reader),
                    Contains("tensor 'down'"));
}

}  // namespace
}  // namespace zinf::io
