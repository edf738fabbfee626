// Rotary position embedding angles, with the `linear` and `llama3` frequency scalings.
#pragma once

#include <vector>

#include "engine/model_config.h"

namespace zinf {

// Inverse frequencies θ_i for i in [0, head_dim/2), after rope_scaling; computed in double.
std::vector<double> RopeInverseFrequencies(const ModelConfig& config);

struct RopeTables {
  std::vector<float> cos;  // [max_context][head_dim / 2]
  std::vector<float> sin;
};

RopeTables BuildRopeTables(const ModelConfig& config, int max_context);

}  // namespace zinf
