// Reads (memory-mapped, every header field checked as untrusted input) and writes safetensors files.
#include "model_formats/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/error.h"
#include "model_formats/json_depth.h"

namespace zinf::formats {
namespace {

using nlohmann::json;

// A header larger than this is not a real checkpoint (real ones are a few hundred KiB at most);
// refusing it early keeps a corrupt length from making us parse the whole weights file as JSON.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr uint64_t kHeaderLengthBytes = 8;  // little-endian u64 before the JSON

std::optional<DType> ParseSafetensorsDType(const std::string& name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

const char* SafetensorsDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI8:
    case DType::kQ4: break;  // zinf's own encodings: never written as safetensors
  }
  return "?";
}

// A non-negative JSON integer, or nullopt (negative, fractional, or not a number).
std::optional<uint64_t> AsUnsigned(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
  return std::nullopt;
}

struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  const std::string* tensor = nullptr;
};

struct ParsedHeader {
  std::vector<SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Checks the header of a mapped file and returns its tensors (spans into `bytes`) and metadata.
ParsedHeader ParseMappedFile(const std::string& path, const std::byte* bytes, uint64_t file_bytes) {
  ParsedHeader parsed;
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<uint8_t>(bytes[i]);
  if (header_bytes > kMaxHeaderBytes) {
    Fail("safetensors file '{}': header length {} at byte 0 exceeds the {}-byte limit", path,
         header_bytes, kMaxHeaderBytes);
  }
  if (header_bytes > file_bytes - kHeaderLengthBytes) {
    Fail("safetensors file '{}': header length {} at byte 0 runs past the end of the file "
         "({} bytes): the file is truncated or not safetensors",
         path, header_bytes, file_bytes);
  }
  const uint64_t data_start = kHeaderLengthBytes + header_bytes;
  const uint64_t data_bytes = file_bytes - data_start;

  const std::string_view header_text(reinterpret_cast<const char*>(bytes + kHeaderLengthBytes),
                                     header_bytes);
  if (const std::optional<uint64_t> offset = FindJsonNestingOver(header_text)) {
    Fail("safetensors file '{}': header JSON nested deeper than {} levels at byte {} of the header",
         path, kMaxJsonDepth, *offset);
  }
  json header;
  try {
    header = json::parse(reinterpret_cast<const char*>(bytes + kHeaderLengthBytes),
                         reinterpret_cast<const char*>(bytes + data_start));
  } catch (const json::parse_error& error) {
    Fail("safetensors file '{}': malformed header JSON at byte {} of the header (file offset {}): "
         "{}",
         path, error.byte, kHeaderLengthBytes + error.byte, error.what());
  } catch (const json::exception& error) {  // e.g. a number too large for a double
    Fail("safetensors file '{}': malformed header JSON: {}", path, error.what());
  }
  if (!header.is_object()) Fail("safetensors file '{}': header JSON is not an object", path);

  std::vector<ByteRange> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) Fail("safetensors file '{}': __metadata__ is not an object", path);
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          Fail("safetensors file '{}': __metadata__ entry '{}' is not a string", path, key);
        }
        parsed.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    // A plain reference: clang before 16 cannot capture a structured binding in a lambda.
    const std::string& tensor_name = name;
    auto fail = [&](const std::string& what) {
      Fail("safetensors file '{}': tensor '{}': {}", path, tensor_name, what);
    };
    if (!entry.is_object()) fail("entry is not an object");
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(field)) fail(fmt::format("missing field '{}'", field));
    }
    const json& dtype_json = entry["dtype"];
    if (!dtype_json.is_string()) fail("'dtype' is not a string");
    const std::string dtype_name = dtype_json.get<std::string>();
    const std::optional<DType> dtype = ParseSafetensorsDType(dtype_name);
    if (!dtype) {
      fail(fmt::format("dtype {} is not supported (zinf reads F32, F16 and BF16)", dtype_name));
    }

    SafetensorsTensor tensor;
    tensor.name = name;
    tensor.dtype = *dtype;
    tensor.file = path;
    const json& shape_json = entry["shape"];
    if (!shape_json.is_array()) fail("'shape' is not an array");
    uint64_t num_bytes = DTypeSize(*dtype);
    for (const json& dim_json : shape_json) {
      const std::optional<uint64_t> dim = AsUnsigned(dim_json);
      if (!dim || *dim > static_cast<uint64_t>(INT64_MAX)) {
        fail(fmt::format("shape {} has a dimension that is not a non-negative integer",
                         shape_json.dump()));
      }
      if (__builtin_mul_overflow(num_bytes, *dim, &num_bytes)) {
        fail(fmt::format("shape {} overflows: its byte size does not fit in 64 bits",
                         shape_json.dump()));
      }
      tensor.shape.push_back(static_cast<int64_t>(*dim));
    }

    const json& offsets_json = entry["data_offsets"];
    if (!offsets_json.is_array() || offsets_json.size() != 2) {
      fail("'data_offsets' is not a [begin, end] pair");
    }
    const std::optional<uint64_t> begin = AsUnsigned(offsets_json[0]);
    const std::optional<uint64_t> end = AsUnsigned(offsets_json[1]);
    if (!begin || !end) fail("'data_offsets' are not non-negative integers");
    if (*begin > *end) {
      fail(fmt::format("data_offsets begin {} is after end {}", *begin, *end));
    }
    if (*end > data_bytes) {
      fail(fmt::format("data_offsets end {} (file offset {}) is past the end of the data section "
                       "({} bytes; file {} bytes)",
                       *end, data_start + *end, data_bytes, file_bytes));
    }
    if (*end - *begin != num_bytes) {
      fail(fmt::format("data_offsets [{}, {}] hold {} bytes but shape {} × {} needs {}", *begin,
                       *end, *end - *begin, shape_json.dump(), dtype_name, num_bytes));
    }
    tensor.data = std::span<const std::byte>(bytes + data_start + *begin, num_bytes);
    parsed.tensors.push_back(std::move(tensor));
    ranges.push_back({*begin, *end, nullptr});
  }

  for (size_t i = 0; i < ranges.size(); ++i) ranges[i].tensor = &parsed.tensors[i].name;
  // Empty tensors occupy no bytes, so they cannot overlap anything.
  std::erase_if(ranges, [](const ByteRange& range) { return range.begin == range.end; });
  std::sort(ranges.begin(), ranges.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      Fail("safetensors file '{}': tensor '{}' data_offsets [{}, {}] overlap tensor '{}' [{}, {}] "
           "(at file offset {})",
           path, *ranges[i].tensor, ranges[i].begin, ranges[i].end, *ranges[i - 1].tensor,
           ranges[i - 1].begin, ranges[i - 1].end, data_start + ranges[i].begin);
    }
  }
  return parsed;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail("safetensors file '{}': cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    Fail("safetensors file '{}': cannot stat: {}", path, std::strerror(err));
  }
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);
  if (file_bytes < kHeaderLengthBytes) {
    ::close(fd);
    Fail("safetensors file '{}': truncated: {} bytes, shorter than the 8-byte header length", path,
         file_bytes);
  }
  void* mapping = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  const int mmap_err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (mapping == MAP_FAILED) {
    Fail("safetensors file '{}': cannot mmap {} bytes: {}", path, file_bytes,
         std::strerror(mmap_err));
  }
  mapping_ = mapping;
  mapping_bytes_ = file_bytes;
  try {
    ParsedHeader parsed =
        ParseMappedFile(path_, static_cast<const std::byte*>(mapping_), file_bytes);
    tensors_ = std::move(parsed.tensors);
    metadata_ = std::move(parsed.metadata);
  } catch (...) {
    ::munmap(mapping_, mapping_bytes_);
    mapping_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
}

void WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors) {
  std::vector<const TensorToWrite*> sorted;
  for (const TensorToWrite& tensor : tensors) sorted.push_back(&tensor);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorToWrite* a, const TensorToWrite* b) { return a->name < b->name; });

  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TensorToWrite& tensor = *sorted[i];
    ZINF_CHECK(i == 0 || sorted[i - 1]->name != tensor.name, "duplicate tensor '{}'", tensor.name);
    ZINF_CHECK(tensor.name != "__metadata__", "reserved tensor name");
    uint64_t expected_bytes = DTypeSize(tensor.dtype);
    for (int64_t dim : tensor.shape) {
      ZINF_CHECK(dim >= 0, "tensor '{}' has a negative dimension", tensor.name);
      expected_bytes *= static_cast<uint64_t>(dim);
    }
    ZINF_CHECK(tensor.data.size() == expected_bytes, "tensor '{}' has {} bytes, its shape needs {}",
               tensor.name, tensor.data.size(), expected_bytes);
    header[tensor.name] = {{"dtype", SafetensorsDTypeName(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + expected_bytes}}};
    offset += expected_bytes;
  }
  std::string header_text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) Fail("cannot create safetensors file '{}': {}", path, std::strerror(errno));
  uint8_t length_bytes[8];
  uint64_t length = header_text.size();
  for (uint8_t& byte : length_bytes) {
    byte = static_cast<uint8_t>(length & 0xff);
    length >>= 8;
  }
  out.write(reinterpret_cast<const char*>(length_bytes), sizeof(length_bytes));
  out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
  for (const TensorToWrite* tensor : sorted) {
    out.write(reinterpret_cast<const char*>(tensor->data.data()),
              static_cast<std::streamsize>(tensor->data.size()));
  }
  out.close();
  if (!out) Fail("cannot write safetensors file '{}': {}", path, std::strerror(errno));
}

}  // namespace zinf::formats
