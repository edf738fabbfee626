// zinf convert: a Hugging Face checkpoint directory → a zinf checkpoint directory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/dtype.h"

namespace zinf::formats {

struct ConvertOptions {
  // f32/f16/bf16 for every tensor, or int8/int4 for the matrices (the rest keep the source's
  // dtype). Default: the checkpoint's own (its tensor dtype).
  std::optional<DType> dtype;
  int group_size = 64;                  // int4: elements per group
  std::vector<std::string> keep_float;  // canonical matrices not quantized (ParseKeepFloat)
  bool overwrite = false;               // replace an existing output directory's files
  // Called after each extent is written: (bytes written so far, total bytes).
  std::function<void(uint64_t, uint64_t)> progress;
};

struct ConvertSummary {
  int num_extents = 0;
  int num_tensors = 0;
  uint64_t weights_bytes = 0;
};

// Counts of a written checkpoint's extent table, for the summary line.
ConvertSummary SummarizeCheckpoint(const std::vector<ExtentInfo>& extents);

ConvertSummary ConvertCheckpoint(const std::string& hf_dir, const std::string& out_dir,
                                 const ConvertOptions& options);

}  // namespace zinf::formats
