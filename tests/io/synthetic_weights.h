// Test helper: writes a small weights file with known bytes and the Checkpoint that describes it.
#pragma once

#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/checkpoint.h"

namespace zinf::io::testing {

// Sizes that exercise one page, several 1 MiB chunks plus a ragged tail, a tiny extent and a last
// extent whose padding is not in the file.
inline const std::vector<uint64_t> kDefaultExtentSizes = {4096, (3u << 20) + 17, 100, 65537, 100};

// Owns the file: removed on destruction.
struct SyntheticWeights {
  Checkpoint checkpoint;
  std::vector<std::vector<std::byte>> contents;  // per extent, its size_bytes expected bytes

  SyntheticWeights() = default;
  SyntheticWeights(const SyntheticWeights&) = delete;
  SyntheticWeights& operator=(const SyntheticWeights&) = delete;
  ~SyntheticWeights() {
    std::error_code ignored;
    std::filesystem::remove(checkpoint.weights_file, ignored);
  }
  const std::string& path() const { return checkpoint.weights_file; }
  // Bytes a full read of every extent fetches: padded, except where the file ends first.
  uint64_t file_bytes_per_pass() const {
    const uint64_t file_size = std::filesystem::file_size(path());
    uint64_t total = 0;
    for (const ExtentInfo& extent : checkpoint.extents) {
      total += std::min(extent.padded_bytes, file_size - extent.offset);
    }
    return total;
  }
};

inline std::string UniqueTestPath(const std::filesystem::path& directory) {
  static std::atomic<int> counter{0};
  return (directory / ("zinf_io_test_" + std::to_string(getpid()) + "_" +
                       std::to_string(counter++) + ".weights"))
      .string();
}

// A deterministic, position- and extent-dependent pattern (a 64-bit LCG), so misplaced bytes show.
inline std::vector<std::byte> PatternBytes(uint64_t size_bytes, uint64_t seed) {
  std::vector<std::byte> bytes(size_bytes);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t idx = 0; idx < size_bytes; ++idx) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    bytes[idx] = static_cast<std::byte>(state >> 56);
  }
  return bytes;
}

inline void MakeSyntheticWeights(SyntheticWeights& weights, const std::filesystem::path& directory,
                                 const std::vector<uint64_t>& sizes = kDefaultExtentSizes) {
  Checkpoint& checkpoint = weights.checkpoint;
  checkpoint.directory = directory.string();
  checkpoint.weights_file = UniqueTestPath(directory);
  std::ofstream file(checkpoint.weights_file, std::ios::binary | std::ios::trunc);
  uint64_t offset = 0;
  for (size_t idx = 0; idx < sizes.size(); ++idx) {
    ExtentInfo extent;
    const bool first = idx == 0;
    const bool last = idx + 1 == sizes.size();
    extent.kind = first ? ExtentKind::kEmbedding : last ? ExtentKind::kHead : ExtentKind::kLayer;
    extent.layer = (first || last) ? -1 : static_cast<int>(idx) - 1;
    extent.name = first ? "embed" : last ? "head" : "layer." + std::to_string(extent.layer);
    extent.offset = offset;
    extent.size_bytes = sizes[idx];
    extent.padded_bytes = (sizes[idx] + kExtentAlignment - 1) / kExtentAlignment * kExtentAlignment;
    std::vector<std::byte> bytes = PatternBytes(sizes[idx], idx + 1);
    extent.xxh3 = XXH3_64bits(bytes.data(), bytes.size());
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    if (!last) {  // the last extent's padding is left out: the file ends at its last tensor byte
      const std::vector<char> padding(extent.padded_bytes - extent.size_bytes, 0);
      file.write(padding.data(), static_cast<std::streamsize>(padding.size()));
    }
    offset += extent.padded_bytes;
    checkpoint.extents.push_back(extent);
    weights.contents.push_back(std::move(bytes));
  }
  file.close();
  if (!file) throw std::runtime_error("could not write " + checkpoint.weights_file);
}

// Overwrites one byte of the file in place with its bitwise complement.
inline void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(~byte);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
}

}  // namespace zinf::io::testing
