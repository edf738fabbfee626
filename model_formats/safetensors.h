// Reads Hugging Face safetensors checkpoints: one file, or shards listed by
// model.safetensors.index.json. Untrusted input: every header field is bounds-checked.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/dtype.h"

namespace zinf::formats {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;  // into the memory-mapped file; valid while the file lives
  std::string file;                 // the file holding it, for messages
};

// One memory-mapped .safetensors file. Throws zinf::Error naming the file and, where it applies,
// the tensor and byte offset, for: a missing/unreadable file, a truncated file, a header length
// past the end, malformed header JSON, an unsupported dtype (only F32/F16/BF16), offsets that
// overlap, overflow, or point past the end, and a byte range that does not match shape × dtype.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a Hugging Face model directory: model.safetensors, or the shards named by
// model.safetensors.index.json (shard names that leave the directory are refused). A directory
// holding only pytorch_model.bin is refused with a message saying to convert to safetensors.
class SafetensorsCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string& model_dir);

  // nullptr when absent.
  const SafetensorsTensor* find(const std::string& name) const;
  // Every tensor, sorted by name.
  std::vector<const SafetensorsTensor*> all() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsTensor*> by_name_;
};

// Writes a single-file safetensors checkpoint (used by tests to make random models, and by tools).
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
};
void WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors);

}  // namespace zinf::formats
