// Which canonical tensors (engine/tensor_names.h), of which shapes, each extent of a model holds:
// the one table the converter writes from and the manifest loader checks against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/model_config.h"

namespace zinf::formats {

struct ExpectedTensor {
  std::string name;            // canonical name, e.g. "q"
  std::vector<int64_t> shape;  // row-major, [out, in] for matrices
};

struct ExpectedExtent {
  std::string name;  // "embed", "layer.N", "layer.N.expert.E", "head"
  ExtentKind kind = ExtentKind::kLayer;
  int layer = -1;                       // for kLayer and kExpert
  int expert = -1;                      // for kExpert
  std::vector<ExpectedTensor> tensors;  // in the order they are laid out in the extent
};

// "embed", "layer.N", "layer.N.expert.E" or "head".
std::string ExtentName(ExtentKind kind, int layer, int expert = -1);
// "embedding", "layer", "expert" or "head", as the manifest spells the kind.
const char* ExtentKindName(ExtentKind kind);
// "[512, 64]", for messages.
std::string ShapeString(const std::vector<int64_t>& shape);

// The extents of a model with this config, in file order: embed, layer.0 .. layer.N-1, head,
// each mixture-of-experts layer followed by its experts' extents.
// The head always holds lm_head (tied embeddings are copied there by the converter).
std::vector<ExpectedExtent> ExpectedExtents(const ModelConfig& config);

}  // namespace zinf::formats
