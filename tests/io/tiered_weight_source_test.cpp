// TieredWeightSource: same bytes in every placement and depth, checksums, truncation, fallbacks.
#include "io/tiered_weight_source.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "engine/error.h"
#include "io/weight_source_factory.h"
#include "tests/io/io_backends.h"
#include "tests/io/synthetic_weights.h"

namespace zinf::io {
namespace {

using Catch::Matchers::Contains;
using testing::IoBackend;
using testing::SyntheticWeights;
using testing::UseIoBackend;

constexpr int kPasses = 3;

std::filesystem::path TestDirectory() { return std::filesystem::temp_directory_path(); }

TieredOptions MakeOptions(int prefetch_depth) {
  TieredOptions options;
  options.prefetch_depth = prefetch_depth;
  return options;
}

// A source's options for one backend, and while it lives the environment that backend needs
// (forcing pread works through ZINF_IO_BACKEND): keep it alive until the source is built.
struct BackendOptions {
  TieredOptions options;
  UseIoBackend use_backend;
  BackendOptions(int prefetch_depth, IoBackend backend)
      : options(MakeOptions(prefetch_depth)), use_backend(backend, options.reader) {}
};

#define ANY_IO_BACKEND() \
  GENERATE(IoBackend::kIoUring, IoBackend::kPreadOption, IoBackend::kPreadForcedByEnv)

// The forward pass's access pattern: prefetch the next `depth`, acquire, compare, release.
void RunPasses(WeightSource& source, const SyntheticWeights& weights, int passes) {
  const int num_extents = static_cast<int>(weights.contents.size());
  for (int pass = 0; pass < passes; ++pass) {
    for (int extent_idx = 0; extent_idx < num_extents; ++extent_idx) {
      for (int ahead = 1; ahead <= source.prefetch_depth(); ++ahead) {
        if (extent_idx + ahead < num_extents) source.Prefetch(extent_idx + ahead);
      }
      const ExtentView view = source.Acquire(extent_idx);
      const std::vector<std::byte>& expected = weights.contents[extent_idx];
      INFO("pass " << pass << ", extent " << extent_idx);
      REQUIRE(view.info->name == weights.checkpoint.extents[extent_idx].name);
      REQUIRE(view.bytes.size() == expected.size());
      REQUIRE(std::memcmp(view.bytes.data(), expected.data(), expected.size()) == 0);
      source.Release(extent_idx);
    }
  }
}

std::vector<WeightPlacement> AllPlacements(const SyntheticWeights& weights,
                                           WeightPlacement placement) {
  return std::vector<WeightPlacement>(weights.checkpoint.extents.size(), placement);
}

TEST_CASE("resident and streamed sources deliver the file's bytes at every depth", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, TestDirectory());
  const uint64_t num_extents = weights.contents.size();
  const IoBackend backend = ANY_IO_BACKEND();
  INFO(backend);

  SECTION("resident: read once, served three passes") {
    const BackendOptions setup(1, backend);
    TieredWeightSource source(weights.checkpoint,
                              AllPlacements(weights, WeightPlacement::kResident), setup.options);
    if (testing::UsesPreadPool(backend)) CHECK_FALSE(source.uses_io_uring());
    RunPasses(source, weights, kPasses);
    CHECK(source.prefetch_depth() == 0);
    CHECK(source.stats().extents_read == num_extents);
    CHECK(source.stats().bytes_read == weights.file_bytes_per_pass());
  }
  SECTION("streamed: every pass re-reads every extent") {
    const int depth = GENERATE(0, 1, 2, 3);
    INFO("prefetch depth " << depth);
    const BackendOptions setup(depth, backend);
    TieredWeightSource source(weights.checkpoint,
                              AllPlacements(weights, WeightPlacement::kStreamed), setup.options);
    if (testing::UsesPreadPool(backend)) CHECK_FALSE(source.uses_io_uring());
    CHECK(source.num_staging_buffers() == depth + 1);
    CHECK(source.stats().bytes_read == 0);
    RunPasses(source, weights, kPasses);
    const WeightIoStats stats = source.stats();
    CHECK(stats.extents_read == kPasses * num_extents);
    CHECK(stats.bytes_read == kPasses * weights.file_bytes_per_pass());
    CHECK(stats.read_wait_seconds >= 0);
    CHECK(stats.checksum_seconds > 0);
  }
  SECTION("mixed: odd extents resident, even ones streamed") {
    std::vector<WeightPlacement> placements;
    uint64_t resident_bytes = 0;
    for (size_t idx = 0; idx < num_extents; ++idx) {
      const bool resident = idx % 2 == 1;
      placements.push_back(resident ? WeightPlacement::kResident : WeightPlacement::kStreamed);
      if (resident) resident_bytes += weights.checkpoint.extents[idx].padded_bytes;
    }
    const BackendOptions setup(2, backend);
    TieredWeightSource source(weights.checkpoint, placements, setup.options);
    CHECK(source.resident_bytes() == resident_bytes);
    RunPasses(source, weights, kPasses);
    CHECK(source.stats().extents_read == num_extents / 2 + kPasses * (num_extents + 1) / 2);
  }
}

TEST_CASE("OpenWeightSource applies the placement to every extent", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, TestDirectory());
  WeightSourceOptions options;
  options.placement = WeightPlacement::kStreamed;
  options.prefetch_depth = 2;
  std::unique_ptr<WeightSource> source = OpenWeightSource(weights.checkpoint, options);
  CHECK(source->prefetch_depth() == 2);
  RunPasses(*source, weights, 2);
  CHECK(source->stats().bytes_read == 2 * weights.file_bytes_per_pass());
}

TEST_CASE("a corrupted byte is reported as a checksum mismatch naming the extent", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, TestDirectory());
  const ExtentInfo& corrupted = weights.checkpoint.extents[1];  // layer.0
  testing::FlipByte(weights.path(), corrupted.offset + 1000);
  const std::string expected_offset = "at offset " + std::to_string(corrupted.offset);
  const IoBackend backend = ANY_IO_BACKEND();
  INFO(backend);
  const BackendOptions setup(1, backend);

  SECTION("streamed: Acquire throws, and throws again on retry") {
    TieredWeightSource source(weights.checkpoint,
                              AllPlacements(weights, WeightPlacement::kStreamed), setup.options);
    source.Prefetch(1);
    CHECK(source.Acquire(0).bytes.size() == weights.contents[0].size());
    source.Release(0);
    for (int attempt = 0; attempt < 2; ++attempt) {
      REQUIRE_THROWS_AS(source.Acquire(1), Error);
      CHECK_THROWS_WITH(source.Acquire(1),
                        Contains("checksum mismatch in extent layer.0 (layer 0)") &&
                            Contains(weights.path()) && Contains(expected_offset) &&
                            Contains("convert again") && !Contains("changed while"));
    }
    CHECK(source.Acquire(2).bytes.size() == weights.contents[2].size());  // still usable
  }
  SECTION("resident: construction throws") {
    CHECK_THROWS_WITH(
        TieredWeightSource(weights.checkpoint, AllPlacements(weights, WeightPlacement::kResident),
                           setup.options),
        Contains("checksum mismatch in extent layer.0 (layer 0)") && Contains(weights.path()));
  }
}

TEST_CASE("a file shorter than its extents is refused at open, naming the file", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, TestDirectory());
  const ExtentInfo& head = weights.checkpoint.extents.back();
  std::filesystem::resize_file(weights.path(), head.offset + head.size_bytes - 1);
  const auto placement = GENERATE(WeightPlacement::kResident, WeightPlacement::kStreamed);
  WeightSourceOptions options;
  options.placement = placement;
  CHECK_THROWS_WITH(OpenWeightSource(weights.checkpoint, options),
                    Contains(weights.path()) && Contains("truncated") &&
                        Contains(std::to_string(head.offset + head.size_bytes)) &&
                        Contains("extent head"));
}

TEST_CASE("buffered reads serve the same bytes when O_DIRECT is refused", "[io]") {
  const IoBackend backend = ANY_IO_BACKEND();
  INFO(backend);
  SECTION("on /dev/shm (tmpfs: O_DIRECT refused before Linux 6.6)") {
    const std::filesystem::path shm = "/dev/shm";
    if (!std::filesystem::is_directory(shm)) {
      WARN("skipping: /dev/shm is missing, so the tmpfs fallback is not exercised here");
      return;
    }
    SyntheticWeights weights;
    testing::MakeSyntheticWeights(weights, shm);
    const BackendOptions setup(2, backend);
    TieredWeightSource source(weights.checkpoint,
                              AllPlacements(weights, WeightPlacement::kStreamed), setup.options);
    if (source.direct_io()) WARN("this kernel's tmpfs accepts O_DIRECT; no fallback happened");
    RunPasses(source, weights, 2);
    CHECK(source.stats().bytes_read == 2 * weights.file_bytes_per_pass());
  }
  SECTION("when the first O_DIRECT read fails with EINVAL") {
    SyntheticWeights weights;
    testing::MakeSyntheticWeights(weights, TestDirectory());
    int reads_seen = 0;
    BackendOptions setup(2, backend);
    setup.options.reader.fault_hook = [&](uint64_t, uint64_t, int64_t result) -> int64_t {
      return reads_seen++ == 0 ? -EINVAL : result;
    };
    TieredWeightSource source(weights.checkpoint,
                              AllPlacements(weights, WeightPlacement::kStreamed), setup.options);
    RunPasses(source, weights, 2);
    CHECK_FALSE(source.direct_io());
    CHECK(reads_seen > 2);
  }
  SECTION("when O_DIRECT is not allowed") {
    SyntheticWeights weights;
    testing::MakeSyntheticWeights(weights, TestDirectory());
    BackendOptions setup(1, backend);
    setup.options.reader.allow_direct_io = false;
    TieredWeightSource source(weights.checkpoint,
                              AllPlacements(weights, WeightPlacement::kStreamed), setup.options);
    CHECK_FALSE(source.direct_io());
    RunPasses(source, weights, 1);
  }
}

TEST_CASE("injected read errors surface from Acquire and can be retried", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, TestDirectory());
  const uint64_t layer_offset = weights.checkpoint.extents[1].offset;
  int failures_left = 1;
  const IoBackend backend = ANY_IO_BACKEND();
  INFO(backend);
  BackendOptions setup(1, backend);
  setup.options.reader.fault_hook = [&](uint64_t file_offset, uint64_t, int64_t result) -> int64_t {
    if (file_offset == layer_offset && failures_left > 0) {
      --failures_left;
      return -EIO;
    }
    return result;
  };
  TieredWeightSource source(weights.checkpoint, AllPlacements(weights, WeightPlacement::kStreamed),
                            setup.options);
  CHECK_THROWS_WITH(source.Acquire(1), Contains("extent layer.0 (layer 0)") &&
                                           Contains(weights.path()) &&
                                           Contains(std::strerror(EIO)));
  RunPasses(source, weights, 1);
}

TEST_CASE("acquiring an extent not prefetched reclaims a prefetched buffer", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, TestDirectory());
  TieredWeightSource source(weights.checkpoint, AllPlacements(weights, WeightPlacement::kStreamed),
                            MakeOptions(1));
  source.Prefetch(1);
  source.Prefetch(2);  // both buffers busy: a hint that does nothing
  const ExtentView first = source.Acquire(0);
  CHECK(std::memcmp(first.bytes.data(), weights.contents[0].data(), first.bytes.size()) == 0);
  source.Release(0);
  source.Prefetch(2);
  const ExtentView out_of_order = source.Acquire(3);  // takes extent 2's buffer, furthest ahead
  CHECK(std::memcmp(out_of_order.bytes.data(), weights.contents[3].data(),
                    out_of_order.bytes.size()) == 0);
  const ExtentView prefetched = source.Acquire(1);  // impossible if extent 1's buffer was taken
  CHECK(std::memcmp(prefetched.bytes.data(), weights.contents[1].data(), prefetched.bytes.size()) ==
        0);
  source.Release(3);
  source.Release(1);
  RunPasses(source, weights, 1);
}

TEST_CASE("acquire and release misuse is caught", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, TestDirectory());
  const auto placement = GENERATE(WeightPlacement::kResident, WeightPlacement::kStreamed);
  TieredWeightSource source(weights.checkpoint, AllPlacements(weights, placement), MakeOptions(0));
  CHECK_THROWS_WITH(source.Release(0), Contains("internal error"));
  source.Acquire(0);
  CHECK_THROWS_WITH(source.Acquire(0), Contains("acquired twice"));
  if (placement == WeightPlacement::kStreamed) {  // depth 0: one staging buffer, already taken
    CHECK_THROWS_WITH(source.Acquire(1), Contains("staging buffers are acquired"));
  }
  source.Release(0);
  CHECK_THROWS_WITH(source.Release(0), Contains("released without being acquired"));
}

}  // namespace
}  // namespace zinf::io
