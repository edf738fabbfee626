// Finds and opens a Hugging Face model directory's safetensors files: one file or indexed shards.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/error.h"
#include "model_formats/json_depth.h"
#include "model_formats/safetensors.h"

namespace zinf::formats {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// True when the directory holds PyTorch pickle weights (pytorch_model.bin or its shards).
bool HasPickleCheckpoint(const fs::path& dir) {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name == "pytorch_model.bin" || name == "pytorch_model.bin.index.json" ||
        (name.starts_with("pytorch_model-") && name.ends_with(".bin"))) {
      return true;
    }
  }
  return false;
}

// A shard name from the index must stay inside the model directory. The check is lexical, not
// through symlinks: the Hugging Face cache links every snapshot file to a blob outside it.
// Returns the normalised name, so "./a" and "a" open one file.
std::string CheckShardName(const fs::path& index_path, const std::string& shard) {
  const fs::path shard_path(shard);
  bool escapes = shard.empty() || shard_path.is_absolute() || shard_path.has_root_name();
  for (const fs::path& part : shard_path) escapes = escapes || part == "..";
  const fs::path normal = shard_path.lexically_normal();
  escapes = escapes || normal.empty() || normal == "." || *normal.begin() == "..";
  if (escapes) {
    Fail("safetensors index '{}': shard '{}' is outside the model directory; refusing it",
         index_path.string(), shard);
  }
  return normal.string();
}

// tensor name → shard file name, from model.safetensors.index.json.
std::map<std::string, std::string> ReadWeightMap(const fs::path& index_path) {
  std::ifstream in(index_path, std::ios::binary);
  if (!in) Fail("safetensors index '{}': cannot open", index_path.string());
  std::stringstream text;
  text << in.rdbuf();
  if (const std::optional<uint64_t> offset = FindJsonNestingOver(text.str())) {
    Fail("safetensors index '{}': JSON nested deeper than {} levels at byte {}",
         index_path.string(), kMaxJsonDepth, *offset);
  }
  json index;
  try {
    index = json::parse(text.str());
  } catch (const json::parse_error& error) {
    Fail("safetensors index '{}': malformed JSON at byte {}: {}", index_path.string(), error.byte,
         error.what());
  } catch (const json::exception& error) {  // e.g. a number too large for a double
    Fail("safetensors index '{}': malformed JSON: {}", index_path.string(), error.what());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    Fail("safetensors index '{}': no 'weight_map' object", index_path.string());
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) {
      Fail("safetensors index '{}': weight_map entry for tensor '{}' is not a string",
           index_path.string(), tensor);
    }
    weight_map[tensor] = CheckShardName(index_path, shard.get<std::string>());
  }
  if (weight_map.empty()) Fail("safetensors index '{}': weight_map is empty", index_path.string());
  return weight_map;
}

}  // namespace

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& model_dir) {
  const fs::path dir(model_dir);
  std::error_code error;
  if (!fs::is_directory(dir, error)) Fail("model directory '{}' does not exist", model_dir);

  const fs::path index_path = dir / kIndexFile;
  std::map<std::string, std::string> weight_map;
  std::vector<std::string> file_names;
  if (fs::exists(index_path, error)) {
    weight_map = ReadWeightMap(index_path);
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : weight_map) shards.insert(shard);
    file_names.assign(shards.begin(), shards.end());
  } else if (fs::exists(dir / kSingleFile, error)) {
    file_names.push_back(kSingleFile);
  } else if (HasPickleCheckpoint(dir)) {
    Fail(
        "model directory '{}' holds only PyTorch pickle weights (pytorch_model*.bin); zinf refuses "
        "pickle checkpoints because loading them can run arbitrary code. Convert them to "
        "safetensors first, e.g. in Python: AutoModelForCausalLM.from_pretrained(dir)"
        ".save_pretrained(out_dir, safe_serialization=True)",
        model_dir);
  } else {
    Fail("model directory '{}' has neither {} nor {}", model_dir, kSingleFile, kIndexFile);
  }

  for (const std::string& name : file_names) {
    files_.push_back(std::make_unique<SafetensorsFile>((dir / name).string()));
    for (const SafetensorsTensor& tensor : files_.back()->tensors()) {
      auto [it, inserted] = by_name_.emplace(tensor.name, &tensor);
      if (!inserted) {
        Fail("model directory '{}': tensor '{}' is in both '{}' and '{}'", model_dir, tensor.name,
             it->second->file, tensor.file);
      }
    }
  }
  for (const auto& [tensor, shard] : weight_map) {
    auto it = by_name_.find(tensor);
    if (it == by_name_.end() || it->second->file != (dir / shard).string()) {
      Fail("safetensors index '{}': tensor '{}' is listed in shard '{}' but is not in it",
           index_path.string(), tensor, shard);
    }
  }
}

const SafetensorsTensor* SafetensorsCheckpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const SafetensorsTensor*> SafetensorsCheckpoint::all() const {
  std::vector<const SafetensorsTensor*> tensors;
  tensors.reserve(by_name_.size());
  for (const auto& [name, tensor] : by_name_) tensors.push_back(tensor);
  return tensors;
}

}  // namespace zinf::formats
