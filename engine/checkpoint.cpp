// Small accessors of the checkpoint description.
#include "engine/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>

namespace zinf {

int64_t TensorInfo::num_elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

const TensorInfo* ExtentInfo::find(std::string_view tensor_name) const {
  for (const TensorInfo& tensor : tensors) {
    if (tensor.name == tensor_name) return &tensor;
  }
  return nullptr;
}

uint64_t Checkpoint::max_extent_padded_bytes() const {
  uint64_t largest = 0;
  for (const ExtentInfo& extent : extents) largest = std::max(largest, extent.padded_bytes);
  return largest;
}

std::string Checkpoint::weights_description() const {
  for (const ExtentInfo& extent : extents) {
    for (const TensorInfo& tensor : extent.tensors) {
      if (tensor.dtype == DType::kI8) return fmt::format("int8 ({} norms)", DTypeName(dtype));
      if (tensor.dtype == DType::kQ4) {
        return fmt::format("int4-g{} ({} norms)", tensor.group_size, DTypeName(dtype));
      }
    }
  }
  return std::string(DTypeName(dtype));
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t total = 0;
  for (const ExtentInfo& extent : extents) total += extent.padded_bytes;
  return total;
}

}  // namespace zinf
