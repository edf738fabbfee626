// Placement of extents and tensors in weights.bin (4 KiB-aligned extents, 64-byte-aligned tensors),
// and the structural checks a manifest's extent table must pass.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/checkpoint.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/weight_encoding.h"

namespace zinf::formats {

// `value` rounded up to a multiple of `alignment` (a power of two).
constexpr uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

// Lays the extents out back to back from offset 0, each tensor stored in the dtype `encoding`
// gives it; checksums are left 0 for the writer to fill in.
std::vector<ExtentInfo> LayoutExtents(const std::vector<ExpectedExtent>& layouts,
                                      const WeightEncoding& encoding);
inline std::vector<ExtentInfo> LayoutExtents(const std::vector<ExpectedExtent>& layouts,
                                             DType dtype) {
  return LayoutExtents(layouts, WeightEncoding::Uniform(dtype));
}

// Bytes weights.bin must span: the end of the last extent's padded range.
uint64_t PaddedFileBytes(const std::vector<ExtentInfo>& extents);

// Checks an extent table read from a manifest against the layout rules and `config`: the expected
// extents in order, aligned, not overlapping, padded_bytes = size_bytes rounded to 4 KiB, each
// tensor 64-byte aligned, inside its extent, not overlapping another, of the config's shape, and
// either of `dtype` or (a matrix) int8 / int4 with a valid group size, its size_bytes what its
// dtype and shape need. Throws zinf::Error starting with `where` (the manifest path) and naming the extent.
void ValidateExtents(const std::vector<ExtentInfo>& extents, const ModelConfig& config, DType dtype,
                     const std::string& where);

}  // namespace zinf::formats
