// WriteWeightsFile: the layout loop; the producer only ever sees one tensor at a time. With
// several producers, whole extents are produced into memory on worker threads, a bounded window
// ahead of the writer, and written in order, so the file is byte-identical to a serial run.
#include "model_formats/weights_writer.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <future>
#include <memory>

#include "engine/error.h"
#include "engine/xxh3.h"
#include "engine/xxh3_state.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/extent_layout.h"

namespace zinf::formats {

namespace {

// Feeds one extent's tensors, and the zero padding between them, to `sink`; checks each
// tensor's size against the layout. Returns each tensor's own XXH3-64, so a reader can check a
// part of the extent (a layer's attention or MLP tensors) without the rest.
std::vector<uint64_t> ProduceExtent(const ExtentInfo& extent, size_t extent_idx,
                                    const TensorProducer& produce, const TensorSink& sink) {
  static const std::vector<std::byte> kZeros(kTensorAlignment);
  const Xxh3State tensor_hash = NewXxh3State();
  std::vector<uint64_t> tensor_hashes;
  uint64_t cursor = 0;
  for (size_t tensor_idx = 0; tensor_idx < extent.tensors.size(); ++tensor_idx) {
    const TensorInfo& tensor = extent.tensors[tensor_idx];
    const uint64_t padding = tensor.offset_in_extent - cursor;
    ZINF_CHECK(padding < kZeros.size(), "tensor padding of {} bytes", padding);
    sink(std::span(kZeros.data(), static_cast<size_t>(padding)));  // checksummed: in the extent
    uint64_t tensor_bytes = 0;
    XXH3_64bits_reset(tensor_hash.get());
    produce(extent_idx, tensor_idx, [&](std::span<const std::byte> bytes) {
      tensor_bytes += bytes.size();
      XXH3_64bits_update(tensor_hash.get(), bytes.data(), bytes.size());
      sink(bytes);
    });
    ZINF_CHECK(tensor_bytes == tensor.size_bytes, "tensor {} of {}: {} bytes produced, {} expected",
               tensor.name, extent.name, tensor_bytes, tensor.size_bytes);
    tensor_hashes.push_back(XXH3_64bits_digest(tensor_hash.get()));
    cursor = tensor.offset_in_extent + tensor.size_bytes;
  }
  return tensor_hashes;
}

void SetTensorHashes(ExtentInfo& extent, const std::vector<uint64_t>& tensor_hashes) {
  for (size_t idx = 0; idx < extent.tensors.size(); ++idx) {
    extent.tensors[idx].xxh3 = tensor_hashes[idx];
  }
}

// How many extents may be in memory at once: one per producer, within a quarter of the
// machine's memory.
size_t ExtentWindow(const std::vector<ExtentInfo>& extents, int producers) {
  uint64_t largest = 1;
  for (const ExtentInfo& extent : extents) largest = std::max(largest, extent.size_bytes);
  const uint64_t memory =
      static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t fit = std::max<uint64_t>(1, memory / 4 / largest);
  return static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(producers), fit));
}

struct ProducedExtent {
  std::vector<std::byte> bytes;
  uint64_t xxh3 = 0;
  std::vector<uint64_t> tensor_hashes;
};

}  // namespace

void WriteWeightsFile(const std::string& path, std::vector<ExtentInfo>& extents,
                      const TensorProducer& produce,
                      const std::function<void(uint64_t, uint64_t)>& progress, int producers) {
  AtomicOutputFile file(path);
  const uint64_t total_bytes = PaddedFileBytes(extents);
  file.Reserve(total_bytes);
  auto finish_extent = [&](ExtentInfo& extent) {
    file.WriteZeros(extent.padded_bytes - extent.size_bytes);  // not part of the checksum
    if (progress) progress(file.bytes_written(), total_bytes);
  };
  auto check_offset = [&](const ExtentInfo& extent) {
    ZINF_CHECK(file.bytes_written() == extent.offset, "extent {} at {}, file at {}", extent.name,
               extent.offset, file.bytes_written());
  };

  if (producers <= 1) {
    const Xxh3State hash = NewXxh3State();
    for (size_t extent_idx = 0; extent_idx < extents.size(); ++extent_idx) {
      ExtentInfo& extent = extents[extent_idx];
      check_offset(extent);
      XXH3_64bits_reset(hash.get());
      SetTensorHashes(
          extent, ProduceExtent(extent, extent_idx, produce, [&](std::span<const std::byte> bytes) {
            XXH3_64bits_update(hash.get(), bytes.data(), bytes.size());
            file.Write(bytes);
          }));
      extent.xxh3 = XXH3_64bits_digest(hash.get());
      finish_extent(extent);
    }
    file.Commit();
    return;
  }

  const size_t window = ExtentWindow(extents, producers);
  std::deque<std::future<ProducedExtent>> in_flight;
  size_t next_to_write = 0;
  auto write_oldest = [&] {
    ProducedExtent produced = in_flight.front().get();  // rethrows a producer's error
    in_flight.pop_front();
    ExtentInfo& extent = extents[next_to_write++];
    check_offset(extent);
    file.Write(produced.bytes);
    extent.xxh3 = produced.xxh3;
    SetTensorHashes(extent, produced.tensor_hashes);
    finish_extent(extent);
  };
  for (size_t extent_idx = 0; extent_idx < extents.size(); ++extent_idx) {
    if (in_flight.size() == window) write_oldest();
    const ExtentInfo& extent = extents[extent_idx];
    in_flight.push_back(std::async(std::launch::async, [&produce, &extent, extent_idx] {
      ProducedExtent produced;
      produced.bytes.reserve(static_cast<size_t>(extent.size_bytes));
      produced.tensor_hashes =
          ProduceExtent(extent, extent_idx, produce, [&](std::span<const std::byte> bytes) {
            produced.bytes.insert(produced.bytes.end(), bytes.begin(), bytes.end());
          });
      produced.xxh3 = XXH3_64bits(produced.bytes.data(), produced.bytes.size());
      return produced;
    }));
  }
  while (!in_flight.empty()) write_oldest();
  file.Commit();
}

}  // namespace zinf::formats
