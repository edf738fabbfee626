// Loading and validating a zinf v1 checkpoint directory, and writing its manifest.
#include "model_formats/zinf_format.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/error.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/extent_layout.h"
#include "model_formats/manifest_json.h"

namespace zinf::formats {

namespace {

// The weights file must hold every extent's tensor bytes. The padding after the last extent's
// size_bytes may be missing (a reader gets a short read there), so only size_bytes is required.
void CheckWeightsFileSize(const Checkpoint& checkpoint, const std::string& where) {
  struct stat info {};
  if (::stat(checkpoint.weights_file.c_str(), &info) != 0) {
    Fail("{}: cannot open weights file {}: {}", where, checkpoint.weights_file,
         std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    Fail("{}: weights file {} is not a regular file", where, checkpoint.weights_file);
  }
  const ExtentInfo& last = checkpoint.extents.back();
  uint64_t needed_bytes = last.offset + last.size_bytes;
  uint64_t file_bytes = static_cast<uint64_t>(info.st_size);
  if (file_bytes < needed_bytes) {
    Fail(
        "{}: weights file {} has {} bytes, but extent '{}' ends at byte {}: the file is truncated; "
        "convert the model again",
        where, checkpoint.weights_file, file_bytes, last.name, needed_bytes);
  }
}

}  // namespace

Checkpoint LoadCheckpoint(const std::string& directory) {
  std::filesystem::path dir = std::filesystem::absolute(directory).lexically_normal();
  std::string manifest_path = (dir / kManifestFile).string();
  std::error_code error;
  if (!std::filesystem::exists(manifest_path, error)) {
    Fail("{} is not a zinf checkpoint: {} does not exist (make one with `zinf convert`)", directory,
         manifest_path);
  }
  Checkpoint checkpoint = ParseManifest(ReadTextFile(manifest_path), manifest_path);
  try {
    ValidateModelConfig(checkpoint.config);
  } catch (const Error& config_error) {
    Rethrow(config_error, manifest_path + ": field 'config'");
  }
  ValidateExtents(checkpoint.extents, checkpoint.config, checkpoint.dtype, manifest_path);
  checkpoint.directory = dir.string();
  checkpoint.weights_file = (dir / checkpoint.weights_file).string();
  CheckWeightsFileSize(checkpoint, manifest_path);
  return checkpoint;
}

void WriteManifest(const std::string& directory, const Checkpoint& checkpoint) {
  WriteManifestWithSource(directory, checkpoint, {"", checkpoint.config.model_type});
}

}  // namespace zinf::formats
