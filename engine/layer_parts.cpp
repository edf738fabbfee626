// SplitLayers: the attention and MLP parts of each layer extent whose tensors are checked alone.
#include "engine/layer_parts.h"

#include <algorithm>
#include <string_view>

#include "engine/tensor_names.h"

namespace zinf {

namespace {

namespace tn = tensor_names;

bool IsAttentionTensor(std::string_view name) {
  for (const char* attention :
       {tn::kAttnNorm, tn::kAttnNormBias, tn::kQ, tn::kK, tn::kV, tn::kO, tn::kQBias, tn::kKBias,
        tn::kVBias, tn::kOBias, tn::kQNorm, tn::kKNorm}) {
    if (name == attention) return true;
  }
  return false;
}

// Index of the MLP's first tensor (ffn_norm), or 0 when the layer cannot be split.
size_t MlpStart(const ExtentInfo& extent) {
  if (extent.kind != ExtentKind::kLayer || extent.part != LayerPart::kWhole) return 0;
  size_t mlp_start = 0;
  for (size_t idx = 0; idx < extent.tensors.size(); ++idx) {
    const TensorInfo& tensor = extent.tensors[idx];
    if (!tensor.xxh3) return 0;  // an older file: only the extent's checksum covers these bytes
    if (tensor.name == tn::kFfnNorm) mlp_start = idx;
    const bool in_mlp = mlp_start != 0;
    if (IsAttentionTensor(tensor.name) == in_mlp) return 0;  // not in the format's order
  }
  return mlp_start;
}

}  // namespace

std::vector<ExtentInfo> SplitLayers(const std::vector<ExtentInfo>& extents) {
  std::vector<ExtentInfo> parts;
  parts.reserve(extents.size() * 2);
  for (const ExtentInfo& extent : extents) {
    const size_t mlp_start = MlpStart(extent);
    if (mlp_start == 0) {
      parts.push_back(extent);
      continue;
    }
    ExtentInfo attention = extent;
    attention.name = extent.name + ".attention";
    attention.part = LayerPart::kAttention;
    attention.tensors.resize(mlp_start);
    const TensorInfo& last = attention.tensors.back();
    attention.size_bytes = last.offset_in_extent + last.size_bytes;
    attention.padded_bytes =
        (attention.size_bytes + kExtentAlignment - 1) / kExtentAlignment * kExtentAlignment;

    ExtentInfo mlp = extent;
    mlp.name = extent.name + ".mlp";
    mlp.part = LayerPart::kMlp;
    mlp.tensors.erase(mlp.tensors.begin(),
                      mlp.tensors.begin() + static_cast<std::ptrdiff_t>(mlp_start));
    const uint64_t start =
        mlp.tensors.front().offset_in_extent / kExtentAlignment * kExtentAlignment;
    mlp.offset = extent.offset + start;
    mlp.size_bytes = extent.size_bytes - start;
    mlp.padded_bytes = extent.padded_bytes - start;
    for (TensorInfo& tensor : mlp.tensors) tensor.offset_in_extent -= start;

    parts.push_back(std::move(attention));
    parts.push_back(std::move(mlp));
  }
  return parts;
}

Checkpoint WithLayerParts(Checkpoint checkpoint) {
  checkpoint.extents = SplitLayers(checkpoint.extents);
  return checkpoint;
}

bool HasWholeLayers(const Checkpoint& checkpoint) {
  return std::any_of(checkpoint.extents.begin(), checkpoint.extents.end(), [](const auto& extent) {
    return extent.kind == ExtentKind::kLayer && extent.part == LayerPart::kWhole;
  });
}

}  // namespace zinf
