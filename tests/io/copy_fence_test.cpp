// TieredWeightSource and the copy fences a device backend hands to Release: a staging buffer's
// fence runs before the buffer takes another extent's read (and not sooner), a resident extent's
// never runs, and every pending one runs before the source frees its buffers.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <thread>

#include "engine/error.h"
#include "io/tiered_weight_source.h"
#include "tests/io/io_backends.h"
#include "tests/io/synthetic_weights.h"

namespace zinf::io {
namespace {

using testing::IoBackend;
using testing::SyntheticWeights;
using testing::UseIoBackend;

// A fake device copy of one released extent. It finishes only when its fence is called: the latest
// a real copy could still be reading the host bytes, so that is when it reads them.
struct PendingCopy {
  int extent_idx = 0;
  std::span<const std::byte> host;  // the bytes the copy reads
  int fence_calls = 0;
  bool read_intact = true;  // every fence call found the extent's bytes still there
};

class FakeDevice {
 public:
  explicit FakeDevice(const SyntheticWeights& weights) : weights_(weights) {}

  CopyFence Fence(int extent_idx, const ExtentView& view) {
    PendingCopy& copy = copies_.emplace_back();
    copy.extent_idx = extent_idx;
    copy.host = view.bytes;
    last_copy_of_[view.bytes.data()] = &copy;
    return [this, &copy] {
      // A moment for a read that was (wrongly) started first to land in the buffer and show.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const std::vector<std::byte>& expected = weights_.contents[copy.extent_idx];
      copy.read_intact = copy.read_intact && copy.host.size() == expected.size() &&
                         std::memcmp(copy.host.data(), expected.data(), expected.size()) == 0;
      ++copy.fence_calls;
    };
  }
  // The copy that last read the bytes at `data`, whose buffer an Acquire just handed out again.
  const PendingCopy* LastCopyOf(const std::byte* data) const {
    const auto found = last_copy_of_.find(data);
    return found == last_copy_of_.end() ? nullptr : found->second;
  }
  const std::deque<PendingCopy>& copies() const { return copies_; }

 private:
  const SyntheticWeights& weights_;
  std::deque<PendingCopy> copies_;  // a deque: fences hold pointers into it
  std::map<const std::byte*, PendingCopy*> last_copy_of_;
};

// Model::Forward's pattern: prefetch `depth` ahead (wrapping into the next pass), acquire, check
// the buffer's previous copy was fenced, release with a fence that has not run yet.
void RunPasses(WeightSource& source, const SyntheticWeights& weights, FakeDevice& device,
               int passes) {
  const int num_extents = static_cast<int>(weights.contents.size());
  const int depth = source.prefetch_depth();
  for (int d = 0; d < depth && d < num_extents; ++d) source.Prefetch(d);
  for (int pass = 0; pass < passes; ++pass) {
    for (int e = 0; e < num_extents; ++e) {
      INFO("pass " << pass << ", extent " << e);
      if (depth > 0) source.Prefetch((e + depth) % num_extents);
      const ExtentView view = source.Acquire(e);
      REQUIRE(std::memcmp(view.bytes.data(), weights.contents[e].data(), view.bytes.size()) == 0);
      if (const PendingCopy* previous = device.LastCopyOf(view.bytes.data());
          previous != nullptr && previous->extent_idx != e) {
        // A buffer that now holds e held another extent: that extent's copy was fenced first.
        CHECK(previous->fence_calls == 1);
      }
      source.Release(e, device.Fence(e, view));
      CHECK(device.copies().back().fence_calls == 0);  // Release itself never waits
    }
  }
}

TieredOptions Options(int prefetch_depth) {
  TieredOptions options;
  options.prefetch_depth = prefetch_depth;
  return options;
}

TEST_CASE("a staging buffer's copy fence runs before the buffer takes another read", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const int depth = GENERATE(0, 1, 2);
  const IoBackend backend = GENERATE(IoBackend::kIoUring, IoBackend::kPreadOption);
  INFO("prefetch depth " << depth << ", " << backend);
  TieredOptions options = Options(depth);
  const UseIoBackend use_backend(backend, options.reader);
  FakeDevice device(weights);
  {
    const std::vector<WeightPlacement> streamed(weights.contents.size(),
                                                WeightPlacement::kStreamed);
    TieredWeightSource source(weights.checkpoint, streamed, options);
    RunPasses(source, weights, device, 3);
    // Only the buffers' latest extents are still unfenced: one per staging buffer at most.
    int pending = 0;
    for (const PendingCopy& copy : device.copies()) pending += copy.fence_calls == 0 ? 1 : 0;
    CHECK(pending <= source.num_staging_buffers());
  }
  // Destroying the source fences whatever was left; each copy exactly once, before any reuse.
  for (const PendingCopy& copy : device.copies()) {
    INFO("a copy of extent " << copy.extent_idx);
    CHECK(copy.fence_calls == 1);
    CHECK(copy.read_intact);
  }
}

TEST_CASE("with a copy buffer, reads never wait on the copy of the extent just released", "[io]") {
  // Without one, the prefetch at extent e takes the buffer e - 1 was released from and waits for
  // its copy, the one the device is most likely still running; a CUDA plan adds one buffer so
  // the buffer taken is e - 2's, whose copy ran before e - 1's.
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const int num_extents = static_cast<int>(weights.contents.size());
  REQUIRE(num_extents >= 4);
  const int depth = GENERATE(1, 2);
  const int copy_buffers = GENERATE(0, 1);
  INFO("prefetch depth " << depth << ", " << copy_buffers << " copy buffer(s)");
  TieredOptions options = Options(depth);
  options.copy_buffers = copy_buffers;
  const std::vector<WeightPlacement> streamed(num_extents, WeightPlacement::kStreamed);
  FakeDevice device(weights);
  TieredWeightSource source(weights.checkpoint, streamed, options);
  CHECK(source.num_staging_buffers() == depth + 1 + copy_buffers);
  for (int d = 0; d < depth; ++d) source.Prefetch(d);
  int waits_on_latest = 0;  // iterations that fenced the copy released just before
  for (int pass = 0; pass < 2; ++pass) {
    for (int e = 0; e < num_extents; ++e) {
      source.Prefetch((e + depth) % num_extents);
      const ExtentView view = source.Acquire(e);
      if (!device.copies().empty() && device.copies().back().fence_calls > 0) ++waits_on_latest;
      source.Release(e, device.Fence(e, view));
    }
  }
  // Without one, every iteration after the first (whose prefetch takes the last fresh buffer).
  CHECK(waits_on_latest == (copy_buffers == 0 ? 2 * num_extents - 1 : 0));
}

TEST_CASE("resident extents' copy fences are dropped, never called", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const bool mixed = GENERATE(false, true);
  INFO((mixed ? "odd extents resident, even ones streamed" : "all resident"));
  std::vector<WeightPlacement> placements;
  for (size_t e = 0; e < weights.contents.size(); ++e) {
    placements.push_back(mixed && e % 2 == 0 ? WeightPlacement::kStreamed
                                             : WeightPlacement::kResident);
  }
  FakeDevice device(weights);
  {
    TieredWeightSource source(weights.checkpoint, placements, Options(1));
    RunPasses(source, weights, device, 3);
  }
  for (const PendingCopy& copy : device.copies()) {
    INFO("a copy of extent " << copy.extent_idx);
    const bool streamed = placements[copy.extent_idx] == WeightPlacement::kStreamed;
    CHECK(copy.fence_calls == (streamed ? 1 : 0));
    CHECK(copy.read_intact);
  }
}

TEST_CASE("a failing copy fence leaves its buffer guarded until it succeeds", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const std::vector<WeightPlacement> streamed(weights.contents.size(), WeightPlacement::kStreamed);
  TieredWeightSource source(weights.checkpoint, streamed, Options(0));  // one staging buffer
  int calls = 0;
  source.Acquire(0);
  source.Release(0, [&calls] {
    if (calls++ == 0) Fail("the device failed");
  });
  CHECK_THROWS_WITH(source.Acquire(1), Catch::Contains("the device failed"));
  const ExtentView view = source.Acquire(1);  // the fence again, then the read
  CHECK(calls == 2);
  CHECK(std::memcmp(view.bytes.data(), weights.contents[1].data(), view.bytes.size()) == 0);
  source.Release(1);
}

}  // namespace
}  // namespace zinf::io
