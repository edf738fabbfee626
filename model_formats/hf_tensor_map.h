// Hugging Face tensor names → zinf's canonical tensors, and the conversion plan that checks a
// safetensors checkpoint holds exactly the tensors, of the shapes, its config calls for.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dtype.h"
#include "engine/model_config.h"
#include "model_formats/canonical_tensors.h"
#include "model_formats/safetensors.h"

namespace zinf::formats {

// Where one Hugging Face tensor goes.
struct HfTensorTarget {
  ExtentKind extent_kind = ExtentKind::kLayer;
  int layer = -1;    // for kLayer and kExpert
  int expert = -1;   // for kExpert
  std::string name;  // canonical name inside the extent
};

enum class HfNameStatus : uint8_t {
  kMapped,   // a weight zinf uses; see the target
  kIgnored,  // a known non-weight (rotary_emb.inv_freq buffers), skipped silently
  kUnknown,  // not understood: the converter refuses it
};

struct HfNameMapping {
  HfNameStatus status = HfNameStatus::kUnknown;
  HfTensorTarget target;  // valid when status == kMapped
};

// Maps one name for the given family. Pure: no knowledge of which tensors the config wants.
HfNameMapping MapHfTensorName(Family family, std::string_view hf_name);

// One extent to write: its expected tensors and, in the same order, where each one's bytes come
// from (a tied lm_head points at the token embedding's source tensor).
struct PlannedExtent {
  ExpectedExtent layout;
  std::vector<const SafetensorsTensor*> sources;  // parallel to layout.tensors; not owned
};

struct ConversionPlan {
  std::vector<PlannedExtent> extents;  // as ExpectedExtents orders them
  // The source tensors' dtype when they all agree, else nullopt (the converter then picks f32).
  std::optional<DType> source_dtype;
  bool lm_head_copied_from_embedding = false;
};

// Checks every tensor of `checkpoint` against `config`. Throws zinf::Error naming the tensor and
// its file for: an unknown name, a name that maps twice, a shape that differs from the config's,
// a tensor the config says the model does not have (e.g. a bias), and naming all missing tensors.
// The plan points into `checkpoint`, which must outlive it.
ConversionPlan PlanConversion(const ModelConfig& config, const SafetensorsCheckpoint& checkpoint);

}  // namespace zinf::formats
