// Writes weights.bin extent by extent — 4 KiB-aligned extents, zero padding between tensors,
// an XXH3-64 checksum per extent — with each tensor's bytes supplied by the caller, so converting
// a Hugging Face checkpoint and generating a synthetic one share the layout code.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/checkpoint.h"

namespace zinf::formats {

// Receives one tensor's bytes, in order, in as many pieces as the producer likes.
using TensorSink = std::function<void(std::span<const std::byte>)>;
// Produces tensor `tensor_idx` of extent `extent_idx` (its TensorInfo says dtype and size).
using TensorProducer = std::function<void(size_t extent_idx, size_t tensor_idx, const TensorSink&)>;

// Writes `path` atomically (temporary file, then rename) and fills in each extent's xxh3 and each
// tensor's.
// progress (may be empty) is called after each extent with (bytes written, total bytes).
// producers > 1 calls `produce` from that many threads at once, each on its own extent (so it
// must be safe to call concurrently); the file is the same either way.
void WriteWeightsFile(const std::string& path, std::vector<ExtentInfo>& extents,
                      const TensorProducer& produce,
                      const std::function<void(uint64_t, uint64_t)>& progress, int producers = 1);

}  // namespace zinf::formats
