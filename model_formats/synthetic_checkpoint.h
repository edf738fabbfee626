// Synthetic checkpoints for measuring without downloads (FlexGen's --dummy): deterministic
// pseudo-random weights of the shape a Hugging Face config.json describes, written straight into
// the zinf format.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/dtype.h"
#include "model_formats/converter.h"

namespace zinf::formats {

struct SyntheticOptions {
  DType dtype = DType::kF16;        // every tensor; or int8/int4 for the matrices
  DType float_dtype = DType::kF16;  // the tensors a quantized checkpoint keeps in floating point
  int group_size = 64;
  std::vector<std::string> keep_float;
  uint64_t seed = 0;
  bool overwrite = false;
  // Threads generating extents at once (a 30B-parameter checkpoint takes minutes on one core);
  // the file does not depend on it.
  int producers = 1;
  std::function<void(uint64_t, uint64_t)> progress;  // (bytes written, total bytes)
};

// Writes out_dir/weights.bin and manifest.json for the model `config_json_path` describes. The
// checkpoint has no tokenizer: prompts are token ids (or `zinf bench`'s synthetic prompts).
// Values are scaled so activations stay finite through any depth: matrices uniform in
// ±1/sqrt(fan_in), norm weights 1, biases small.
ConvertSummary WriteSyntheticCheckpoint(const std::string& config_json_path,
                                        const std::string& out_dir,
                                        const SyntheticOptions& options);

}  // namespace zinf::formats
