// A weights file truncated, rewritten or replaced while a source streams it: a clear "changed while
// zinf was running — rerun" error, never bytes that differ from the checkpoint's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/error.h"
#include "io/tiered_weight_source.h"
#include "tests/io/io_backends.h"
#include "tests/io/synthetic_weights.h"

namespace zinf::io {
namespace {

using Catch::Matchers::Contains;
using testing::IoBackend;
using testing::SyntheticWeights;

timespec ModifiedTime(const std::string& path) {
  struct stat info {};
  REQUIRE(stat(path.c_str(), &info) == 0);
  return info.st_mtim;
}

bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// Writes 64 bytes of 0xAB at `offset` in place (same inode, same size), as an editor or a second
// convert writing into the file would. File times tick with the kernel's coarse clock (a few ms),
// so the write is repeated (it is idempotent) until the modified time has moved; otherwise the
// change would be invisible to any stat-based check, and this test would not test it.
void OverwriteInPlace(const std::string& path, uint64_t offset) {
  const timespec before = ModifiedTime(path);
  const std::vector<char> bytes(64, static_cast<char>(0xAB));
  for (int attempt = 0; attempt < 300; ++attempt) {
    {
      std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
      file.seekp(static_cast<std::streamoff>(offset));
      file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      REQUIRE(file.good());
    }
    if (!SameTime(ModifiedTime(path), before)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("the modified time of " << path << " did not change in 3 s of writes");
}

std::vector<WeightPlacement> AllStreamed(const SyntheticWeights& weights) {
  return std::vector<WeightPlacement>(weights.checkpoint.extents.size(),
                                      WeightPlacement::kStreamed);
}

// One pass of the forward pass's pattern, comparing every extent: the run before the change.
void RunOnePass(TieredWeightSource& source, const SyntheticWeights& weights) {
  for (int idx = 0; idx < static_cast<int>(weights.contents.size()); ++idx) {
    if (idx + 1 < static_cast<int>(weights.contents.size())) source.Prefetch(idx + 1);
    const ExtentView view = source.Acquire(idx);
    INFO("extent " << idx);
    REQUIRE(std::memcmp(view.bytes.data(), weights.contents[idx].data(),
                        weights.contents[idx].size()) == 0);
    source.Release(idx);
  }
}

void CheckAcquireMatches(TieredWeightSource& source, const SyntheticWeights& weights, int idx) {
  const ExtentView view = source.Acquire(idx);
  CHECK(std::memcmp(view.bytes.data(), weights.contents[idx].data(),
                    weights.contents[idx].size()) == 0);
  source.Release(idx);
}

TEST_CASE("a weights file truncated between two acquires is reported as changed, not served",
          "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const ExtentInfo& layer = weights.checkpoint.extents[1];  // layer.0: 3 MiB + 17 bytes
  const IoBackend backend =
      GENERATE(IoBackend::kIoUring, IoBackend::kPreadOption, IoBackend::kPreadForcedByEnv);
  // Inside the extent's second chunk, or exactly where it starts (its first read finds the end).
  const uint64_t new_size = GENERATE_REF(layer.offset + (1u << 20) + 5, layer.offset);
  INFO(backend << ", truncated to " << new_size);
  TieredOptions options;
  options.prefetch_depth = 1;
  const testing::UseIoBackend use_backend(backend, options.reader);
  TieredWeightSource source(weights.checkpoint, AllStreamed(weights), options);
  const uint64_t old_size = std::filesystem::file_size(weights.path());
  RunOnePass(source, weights);

  std::filesystem::resize_file(weights.path(), new_size);
  CheckAcquireMatches(source, weights, 0);         // before the cut: still whole
  for (int attempt = 0; attempt < 2; ++attempt) {  // a retry fails the same way
    CHECK_THROWS_WITH(source.Acquire(1),
                      Contains("weights file " + weights.path() +
                               " changed while zinf was running (size " + std::to_string(old_size) +
                               " → " + std::to_string(new_size) + " bytes) — rerun") &&
                          Contains("extent layer.0 (layer 0)"));
  }
}

TEST_CASE("an extent overwritten in place is reported as changed, not served", "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  const ExtentInfo& layer = weights.checkpoint.extents[1];
  const IoBackend backend =
      GENERATE(IoBackend::kIoUring, IoBackend::kPreadOption, IoBackend::kPreadForcedByEnv);
  INFO(backend);
  TieredOptions options;
  options.prefetch_depth = 1;
  const testing::UseIoBackend use_backend(backend, options.reader);
  TieredWeightSource source(weights.checkpoint, AllStreamed(weights), options);
  RunOnePass(source, weights);

  OverwriteInPlace(weights.path(), layer.offset + 1000);
  CheckAcquireMatches(source, weights, 0);
  CHECK_THROWS_WITH(source.Acquire(1),
                    Contains(weights.path() +
                             " changed while zinf was running (rewritten in place: same size, new "
                             "modified time) — rerun") &&
                        Contains("checksum mismatch in extent layer.0 (layer 0)") &&
                        !Contains("convert again"));
  CheckAcquireMatches(source, weights, 2);  // extents the write missed are still served
}

TEST_CASE("a weights file renamed over keeps the open file's bytes; damage to those is reported",
          "[io]") {
  SyntheticWeights weights;
  testing::MakeSyntheticWeights(weights, std::filesystem::temp_directory_path());
  TieredOptions options;
  options.prefetch_depth = 1;
  TieredWeightSource source(weights.checkpoint, AllStreamed(weights), options);
  RunOnePass(source, weights);

  // A new file with other bytes takes the path (how `cp new tmp && mv tmp weights.bin` replaces
  // it). The source still reads the file it opened, which is still the checkpoint it checked.
  const int old_file = open(weights.path().c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(old_file >= 0);
  const std::string replacement = weights.path() + ".new";
  std::filesystem::copy_file(weights.path(), replacement);
  testing::FlipByte(replacement, weights.checkpoint.extents[1].offset + 10);
  std::filesystem::rename(replacement, weights.path());
  RunOnePass(source, weights);

  // Once the old file is cut short as well, the error names both changes.
  const uint64_t old_size = std::filesystem::file_size(weights.path());
  REQUIRE(ftruncate(old_file, 4096) == 0);
  close(old_file);
  CHECK_THROWS_WITH(source.Acquire(1),
                    Contains("changed while zinf was running (size " + std::to_string(old_size) +
                             " → 4096 bytes; replaced: the path now names another file)"));
}

}  // namespace
}  // namespace zinf::io
