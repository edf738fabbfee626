// Which dtype each tensor of a checkpoint is stored in: every vector (norms, biases) in the
// float dtype, matrices in the float dtype or quantized (int8, int4 with a group size), except
// the matrices the user keeps in floating point (`zinf convert --keep-float`) and the routers of
// mixture-of-experts layers.
#pragma once

#include <string>
#include <vector>

#include "engine/dtype.h"
#include "model_formats/canonical_tensors.h"

namespace zinf::formats {

struct WeightEncoding {
  DType float_dtype = DType::kF32;      // f32, f16 or bf16
  DType matrix_dtype = DType::kF32;     // float_dtype, or int8 / int4
  int group_size = 64;                  // int4 only
  std::vector<std::string> keep_float;  // canonical matrix names stored as float_dtype

  // Every tensor in `dtype` (which must be a float dtype): the unquantized encoding.
  static WeightEncoding Uniform(DType dtype);
  // `dtype` as asked for with --dtype: a float dtype for everything, or int8 / int4 for the
  // matrices with `float_dtype` for the rest. Throws zinf::Error for an invalid group size.
  static WeightEncoding For(DType dtype, DType float_dtype, int group_size,
                            std::vector<std::string> keep_float);

  DType DTypeFor(const ExpectedTensor& tensor) const;
  int GroupSizeFor(const ExpectedTensor& tensor) const;  // 0 unless stored as int4
};

// Parses --keep-float's list: canonical matrix names (q, k, v, o, gate, up, down, token_embed,
// position_embed, project_in, project_out, lm_head) and the shorthands "embed" (the embedding
// extent's matrices), "head" (lm_head, project_out) and "none". Throws zinf::Error naming the
// unknown entry.
std::vector<std::string> ParseKeepFloat(const std::string& list);

}  // namespace zinf::formats
