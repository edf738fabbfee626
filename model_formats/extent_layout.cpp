// Extent and tensor placement in weights.bin, and the checks a manifest's extent table must pass.
#include "model_formats/extent_layout.h"

#include <algorithm>
#include <limits>

#include "engine/error.h"
#include "engine/quantized.h"

namespace zinf::formats {

std::vector<ExtentInfo> LayoutExtents(const std::vector<ExpectedExtent>& layouts,
                                      const WeightEncoding& encoding) {
  std::vector<ExtentInfo> extents;
  extents.reserve(layouts.size());
  uint64_t file_offset = 0;
  for (const ExpectedExtent& layout : layouts) {
    ExtentInfo extent;
    extent.name = layout.name;
    extent.kind = layout.kind;
    extent.layer = layout.layer;
    extent.expert = layout.expert;
    extent.offset = file_offset;
    uint64_t cursor = 0;
    for (const ExpectedTensor& expected : layout.tensors) {
      TensorInfo tensor;
      tensor.name = expected.name;
      tensor.dtype = encoding.DTypeFor(expected);
      tensor.group_size = encoding.GroupSizeFor(expected);
      tensor.shape = expected.shape;
      tensor.offset_in_extent = AlignUp(cursor, kTensorAlignment);
      tensor.size_bytes =
          TensorBytes(tensor.dtype, tensor.rows(), tensor.cols(), tensor.group_size);
      cursor = tensor.offset_in_extent + tensor.size_bytes;
      extent.tensors.push_back(std::move(tensor));
    }
    extent.size_bytes = cursor;
    extent.padded_bytes = AlignUp(cursor, kExtentAlignment);
    file_offset += extent.padded_bytes;
    extents.push_back(std::move(extent));
  }
  return extents;
}

uint64_t PaddedFileBytes(const std::vector<ExtentInfo>& extents) {
  return extents.empty() ? 0 : extents.back().offset + extents.back().padded_bytes;
}

namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

void ValidateTensors(const ExtentInfo& extent, const ExpectedExtent& expected, DType dtype,
                     const std::string& where) {
  for (const TensorInfo& tensor : extent.tensors) {
    auto want = std::find_if(expected.tensors.begin(), expected.tensors.end(),
                             [&](const ExpectedTensor& e) { return e.name == tensor.name; });
    if (want == expected.tensors.end()) {
      Fail("{}: extent '{}' holds tensor '{}', which a model with this config does not have", where,
           extent.name, tensor.name);
    }
    if (tensor.shape != want->shape) {
      Fail("{}: extent '{}' tensor '{}' has shape {}, but the config implies {}", where,
           extent.name, tensor.name, ShapeString(tensor.shape), ShapeString(want->shape));
    }
    const bool quantized_matrix = IsQuantized(tensor.dtype) && tensor.shape.size() == 2;
    if (tensor.dtype != dtype && !quantized_matrix) {
      Fail("{}: extent '{}' tensor '{}' is {}, but the checkpoint dtype is {}{}", where,
           extent.name, tensor.name, DTypeName(tensor.dtype), DTypeName(dtype),
           IsQuantized(tensor.dtype) ? " (only matrices may be quantized)" : "");
    }
    if (tensor.dtype == DType::kQ4 ? !IsValidGroupSize(tensor.group_size)
                                   : tensor.group_size != 0) {
      Fail("{}: extent '{}' tensor '{}' has group_size {}, expected {}", where, extent.name,
           tensor.name, tensor.group_size,
           tensor.dtype == DType::kQ4 ? "32, 64 or 128" : "none (only int4 has groups)");
    }
    if (tensor.offset_in_extent % kTensorAlignment != 0) {
      Fail("{}: extent '{}' tensor '{}' offset {} is not a multiple of {}", where, extent.name,
           tensor.name, tensor.offset_in_extent, kTensorAlignment);
    }
    const uint64_t expected_bytes =
        TensorBytes(tensor.dtype, tensor.rows(), tensor.cols(), tensor.group_size);
    if (tensor.size_bytes != expected_bytes) {
      Fail("{}: extent '{}' tensor '{}' size_bytes is {}, but shape {} of {} needs {}", where,
           extent.name, tensor.name, tensor.size_bytes, ShapeString(tensor.shape),
           DTypeName(tensor.dtype), expected_bytes);
    }
    if (tensor.offset_in_extent > extent.size_bytes ||
        tensor.size_bytes > extent.size_bytes - tensor.offset_in_extent) {
      Fail("{}: extent '{}' tensor '{}' (offset {}, {} bytes) runs past the extent's {} bytes",
           where, extent.name, tensor.name, tensor.offset_in_extent, tensor.size_bytes,
           extent.size_bytes);
    }
  }
  for (const ExpectedTensor& want : expected.tensors) {
    if (extent.find(want.name) == nullptr) {
      Fail("{}: extent '{}' lacks tensor '{}'", where, extent.name, want.name);
    }
  }
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& tensor : extent.tensors) by_offset.push_back(&tensor);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->offset_in_extent < b->offset_in_extent;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& previous = *by_offset[i - 1];
    if (previous.offset_in_extent + previous.size_bytes > by_offset[i]->offset_in_extent) {
      Fail("{}: extent '{}' tensors '{}' and '{}' overlap", where, extent.name, previous.name,
           by_offset[i]->name);
    }
  }
}

}  // namespace

void ValidateExtents(const std::vector<ExtentInfo>& extents, const ModelConfig& config, DType dtype,
                     const std::string& where) {
  std::vector<ExpectedExtent> expected = ExpectedExtents(config);
  if (extents.size() != expected.size()) {
    Fail(
        "{}: 'extents' has {} entries, but a model with {} layers needs {} (embed, layers{}, head)",
        where, extents.size(), config.num_layers, expected.size(),
        config.is_moe() ? ", experts" : "");
  }
  uint64_t end_of_previous = 0;
  for (size_t idx = 0; idx < extents.size(); ++idx) {
    const ExtentInfo& extent = extents[idx];
    const ExpectedExtent& want = expected[idx];
    if (extent.name != want.name || extent.kind != want.kind || extent.layer != want.layer ||
        extent.expert != want.expert) {
      Fail("{}: extent {} is '{}' ({}), expected '{}' ({}): extents must be in the order embed, "
           "layer.0{} .. layer.{}, head",
           where, idx, extent.name, ExtentKindName(extent.kind), want.name,
           ExtentKindName(want.kind), config.num_layers - 1,
           config.is_moe() ? " (and its experts)" : "");
    }
    if (extent.offset % kExtentAlignment != 0) {
      Fail("{}: extent '{}' offset {} is not a multiple of {}", where, extent.name, extent.offset,
           kExtentAlignment);
    }
    if (extent.size_bytes == 0) Fail("{}: extent '{}' has size_bytes 0", where, extent.name);
    if (extent.size_bytes > kMaxU64 - kExtentAlignment ||
        extent.padded_bytes != AlignUp(extent.size_bytes, kExtentAlignment)) {
      Fail("{}: extent '{}' padded_bytes {} is not size_bytes {} rounded up to {}", where,
           extent.name, extent.padded_bytes, extent.size_bytes, kExtentAlignment);
    }
    if (extent.offset < end_of_previous) {
      Fail("{}: extent '{}' at offset {} overlaps the previous extent, which ends at {}", where,
           extent.name, extent.offset, end_of_previous);
    }
    if (extent.padded_bytes > kMaxU64 - extent.offset) {
      Fail("{}: extent '{}' offset {} + padded_bytes {} overflows", where, extent.name,
           extent.offset, extent.padded_bytes);
    }
    end_of_previous = extent.offset + extent.padded_bytes;
    ValidateTensors(extent, want, dtype, where);
  }
}

}  // namespace zinf::formats
