// zinf verify DIR [--add-tensor-checksums]: reads every extent of a checkpoint once and checks its
// checksum (and each tensor's, where the manifest has them); with the flag, writes the tensors'
// checksums into a manifest that lacks them, so a checkpoint converted before they existed is
// read in parts (engine/layer_parts.h) without converting it again.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "cmd/commands.h"
#include "cmd/progress_bar.h"
#include "engine/error.h"
#include "engine/xxh3.h"
#include "engine/xxh3_state.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/zinf_format.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace zinf::cli {
namespace {

struct VerifyOptions {
  std::string model_dir;
  bool add_tensor_checksums = false;
};

constexpr size_t kChunkBytes = size_t{8} << 20;

// The extent's checksum and each of its tensors', from one pass over its bytes.
struct ExtentHashes {
  uint64_t extent = 0;
  std::vector<uint64_t> tensors;
};

// Reads [offset, offset + n) of the file into `buffer` whole, or fails naming the file and place.
void ReadFully(int fd, const std::string& path, uint64_t offset, std::byte* buffer, size_t n) {
  for (size_t done = 0; done < n;) {
    const ssize_t got = ::pread(fd, buffer + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Fail("reading {} at byte {}: {}", path, offset + done, std::strerror(errno));
    if (got == 0)
      Fail("{} ends at byte {}: it is truncated; copy or convert it again", path, offset + done);
    done += static_cast<size_t>(got);
  }
}

ExtentHashes HashExtent(int fd, const std::string& path, const ExtentInfo& extent,
                        std::vector<std::byte>& buffer, ProgressBar& progress, uint64_t& done) {
  const Xxh3State whole = NewXxh3State(), tensor = NewXxh3State();
  XXH3_64bits_reset(whole.get());
  XXH3_64bits_reset(tensor.get());
  ExtentHashes hashes;
  size_t next = 0;  // the tensor being hashed
  for (uint64_t pos = 0; pos < extent.size_bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, extent.size_bytes - pos));
    ReadFully(fd, path, extent.offset + pos, buffer.data(), n);
    XXH3_64bits_update(whole.get(), buffer.data(), n);
    for (; next < extent.tensors.size(); ++next) {
      const uint64_t begin = extent.tensors[next].offset_in_extent;
      const uint64_t end = begin + extent.tensors[next].size_bytes;
      const uint64_t from = std::max(begin, pos), to = std::min(end, pos + n);
      if (from < to) XXH3_64bits_update(tensor.get(), buffer.data() + (from - pos), to - from);
      if (end > pos + n) break;  // continues in the next chunk
      hashes.tensors.push_back(XXH3_64bits_digest(tensor.get()));
      XXH3_64bits_reset(tensor.get());
    }
    // Read once and done with: keep a 100 GB checkpoint from pushing everything else out of the
    // page cache.
    ::posix_fadvise(fd, static_cast<off_t>(extent.offset + pos), static_cast<off_t>(n),
                    POSIX_FADV_DONTNEED);
    pos += n;
    done += n;
    progress.Update(done, fmt::format("{:.1f} GiB, {}", done / 1073741824.0, extent.name));
  }
  hashes.extent = XXH3_64bits_digest(whole.get());
  return hashes;
}

// What differs between the manifest's checksums and the bytes': "" when nothing does.
std::string Mismatches(const ExtentInfo& extent, const ExtentHashes& hashes) {
  std::string found;
  if (hashes.extent != extent.xxh3) {
    found += fmt::format("\n  extent {} at byte {}: expected {:016x}, got {:016x}", extent.name,
                         extent.offset, extent.xxh3, hashes.extent);
  }
  for (size_t t = 0; t < extent.tensors.size(); ++t) {
    const TensorInfo& tensor = extent.tensors[t];
    if (tensor.xxh3 && *tensor.xxh3 != hashes.tensors[t]) {
      found += fmt::format("\n  tensor '{}' of extent {} at byte {}: expected {:016x}, got {:016x}",
                           tensor.name, extent.name, extent.offset + tensor.offset_in_extent,
                           *tensor.xxh3, hashes.tensors[t]);
    }
  }
  return found;
}

// Adds each tensor's checksum to the manifest as read, every other field kept as it is.
void WriteTensorChecksums(const std::string& manifest_path,
                          const std::vector<ExtentHashes>& hashes) {
  nlohmann::ordered_json manifest =
      nlohmann::ordered_json::parse(formats::ReadTextFile(manifest_path));
  auto& extents = manifest.at("extents");
  ZINF_CHECK(extents.size() == hashes.size(), "{} extents in {}, {} hashed", extents.size(),
             manifest_path, hashes.size());
  for (size_t e = 0; e < hashes.size(); ++e) {
    auto& tensors = extents[e].at("tensors");
    for (size_t t = 0; t < tensors.size(); ++t) {
      tensors[t]["xxh3"] = fmt::format("{:016x}", hashes[e].tensors.at(t));
    }
  }
  const std::string text = manifest.dump(2) + "\n";
  formats::AtomicOutputFile file(manifest_path);
  file.Write(std::as_bytes(std::span(text)));
  file.Commit();
}

void RunVerify(const VerifyOptions& options) {
  const Checkpoint checkpoint = formats::LoadCheckpoint(options.model_dir);
  const std::string& path = checkpoint.weights_file;
  struct File {
    int fd;
    ~File() {
      if (fd >= 0) ::close(fd);
    }
  } file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  const int fd = file.fd;
  if (fd < 0) Fail("cannot open weights file {}: {}", path, std::strerror(errno));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

  uint64_t total = 0, done = 0;
  size_t missing = 0;  // tensors without their own checksum
  for (const ExtentInfo& extent : checkpoint.extents) {
    total += extent.size_bytes;
    for (const TensorInfo& tensor : extent.tensors) missing += !tensor.xxh3;
  }
  ProgressBar progress("verifying", total);
  std::vector<std::byte> buffer(kChunkBytes);
  std::vector<ExtentHashes> hashes;
  std::string mismatches;
  for (const ExtentInfo& extent : checkpoint.extents) {
    hashes.push_back(HashExtent(fd, path, extent, buffer, progress, done));
    mismatches += Mismatches(extent, hashes.back());
  }
  progress.Finish();
  if (!mismatches.empty()) {
    Fail("{}: checksum mismatch, the file is corrupt — convert again:{}", path, mismatches);
  }
  fmt::print("{}: all {} extents ({:.2f} GiB) match their checksums", options.model_dir,
             checkpoint.extents.size(), total / 1073741824.0);
  if (missing == 0) {
    fmt::print(", and every tensor its own\n");
    return;
  }
  if (!options.add_tensor_checksums) {
    fmt::print("; {} tensors have no checksum of their own, so layers are streamed whole (add "
               "them with --add-tensor-checksums)\n",
               missing);
    return;
  }
  WriteTensorChecksums(checkpoint.directory + "/" + formats::kManifestFile, hashes);
  fmt::print("; wrote the checksums of {} tensors into its manifest, so its layers are read in "
             "parts\n",
             missing);
}

}  // namespace

void AddVerifyCommand(CLI::App& app) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* command = app.add_subcommand(
      "verify", "Read a zinf checkpoint once and check every checksum (after a copy, or to add "
                "the tensors' own to a checkpoint converted before they existed)");
  command->add_option("DIR", options->model_dir, "the zinf checkpoint directory")->required();
  command->add_flag("--add-tensor-checksums", options->add_tensor_checksums,
                    "once every extent checks out, write each tensor's checksum into the "
                    "manifest (atomically), so each layer is streamed as two parts with smaller "
                    "staging buffers");
  command->callback([options] { RunVerify(*options); });
}

}  // namespace zinf::cli
