// WriteWeightsFile: the layout loop; the producer only ever sees one tensor at a time.
#include "model_formats/weights_writer.h"

#include <xxhash.h>

#include <memory>

#include "engine/error.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/extent_layout.h"

namespace zinf::formats {

namespace {

struct Xxh3StateDeleter {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};

}  // namespace

void WriteWeightsFile(const std::string& path, std::vector<ExtentInfo>& extents,
                      const TensorProducer& produce,
                      const std::function<void(uint64_t, uint64_t)>& progress) {
  AtomicOutputFile file(path);
  std::unique_ptr<XXH3_state_t, Xxh3StateDeleter> hash(XXH3_createState());
  ZINF_CHECK(hash != nullptr, "XXH3_createState failed");
  uint64_t tensor_bytes = 0;
  const TensorSink sink = [&](std::span<const std::byte> bytes) {
    XXH3_64bits_update(hash.get(), bytes.data(), bytes.size());
    file.Write(bytes);
    tensor_bytes += bytes.size();
  };
  static const std::vector<std::byte> kZeros(kTensorAlignment);

  const uint64_t total_bytes = PaddedFileBytes(extents);
  for (size_t extent_idx = 0; extent_idx < extents.size(); ++extent_idx) {
    ExtentInfo& extent = extents[extent_idx];
    ZINF_CHECK(file.bytes_written() == extent.offset, "extent {} at {}, file at {}", extent.name,
               extent.offset, file.bytes_written());
    XXH3_64bits_reset(hash.get());
    uint64_t cursor = 0;
    for (size_t tensor_idx = 0; tensor_idx < extent.tensors.size(); ++tensor_idx) {
      const TensorInfo& tensor = extent.tensors[tensor_idx];
      const uint64_t padding = tensor.offset_in_extent - cursor;
      ZINF_CHECK(padding < kZeros.size(), "tensor padding of {} bytes", padding);
      sink(std::span(kZeros.data(),
                     static_cast<size_t>(padding)));  // checksummed: inside the extent
      tensor_bytes = 0;
      produce(extent_idx, tensor_idx, sink);
      ZINF_CHECK(tensor_bytes == tensor.size_bytes,
                 "tensor {} of {}: {} bytes produced, {} expected", tensor.name, extent.name,
                 tensor_bytes, tensor.size_bytes);
      cursor = tensor.offset_in_extent + tensor.size_bytes;
    }
    extent.xxh3 = XXH3_64bits_digest(hash.get());
    file.WriteZeros(extent.padded_bytes - extent.size_bytes);  // not part of the checksum
    if (progress) progress(file.bytes_written(), total_bytes);
  }
  file.Commit();
}

}  // namespace zinf::formats
