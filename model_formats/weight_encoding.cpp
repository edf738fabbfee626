// WeightEncoding: the per-tensor dtype rule of quantized conversions.
#include "model_formats/weight_encoding.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/quantized.h"
#include "engine/tensor_names.h"

namespace zinf::formats {

namespace tn = tensor_names;

namespace {

const std::vector<std::string> kMatrixNames = {tn::kQ,          tn::kK,          tn::kV,
                                               tn::kO,          tn::kGate,       tn::kUp,
                                               tn::kDown,       tn::kTokenEmbed, tn::kPositionEmbed,
                                               tn::kProjectIn,  tn::kProjectOut, tn::kLmHead,
                                               tn::kSharedGate, tn::kSharedUp,   tn::kSharedDown};

// Routing picks experts by comparing logits, so a rounding error can swap an expert for another
// instead of nudging a value: routers stay in floating point (llama.cpp's quantizer does the same).
bool IsRouting(const std::string& name) {
  return name == tn::kRouter || name == tn::kSharedExpertGate;
}

}  // namespace

WeightEncoding WeightEncoding::Uniform(DType dtype) {
  WeightEncoding encoding;
  encoding.float_dtype = dtype;
  encoding.matrix_dtype = dtype;
  return encoding;
}

WeightEncoding WeightEncoding::For(DType dtype, DType float_dtype, int group_size,
                                   std::vector<std::string> keep_float) {
  if (!IsQuantized(dtype)) return Uniform(dtype);
  if (dtype == DType::kQ4 && !IsValidGroupSize(group_size)) {
    Fail("--group-size: {} is not supported for int4; use 32, 64 or 128", group_size);
  }
  WeightEncoding encoding;
  encoding.float_dtype = float_dtype;
  encoding.matrix_dtype = dtype;
  encoding.group_size = group_size;
  encoding.keep_float = std::move(keep_float);
  return encoding;
}

DType WeightEncoding::DTypeFor(const ExpectedTensor& tensor) const {
  if (tensor.shape.size() != 2 || !IsQuantized(matrix_dtype) || IsRouting(tensor.name)) {
    return float_dtype;
  }
  const bool kept =
      std::find(keep_float.begin(), keep_float.end(), tensor.name) != keep_float.end();
  return kept ? float_dtype : matrix_dtype;
}

int WeightEncoding::GroupSizeFor(const ExpectedTensor& tensor) const {
  return DTypeFor(tensor) == DType::kQ4 ? group_size : 0;
}

std::vector<std::string> ParseKeepFloat(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    if (item.empty() || item == "none") continue;
    if (item == "embed") {
      names.insert(names.end(), {tn::kTokenEmbed, tn::kPositionEmbed, tn::kProjectIn});
    } else if (item == "head") {
      names.insert(names.end(), {tn::kLmHead, tn::kProjectOut});
    } else if (std::find(kMatrixNames.begin(), kMatrixNames.end(), item) != kMatrixNames.end()) {
      names.push_back(item);
    } else {
      Fail("--keep-float: '{}' is not a weight matrix; use embed, head, none or a canonical name "
           "(q, k, v, o, gate, up, down, token_embed, position_embed, project_in, project_out, "
           "lm_head, shared_gate, shared_up, shared_down)",
           item);
    }
  }
  return names;
}

}  // namespace zinf::formats
