// RoPE frequencies as Hugging Face computes them (modeling_rope_utils), in double precision.
#include "engine/rope.h"

#include <cmath>
#include <numbers>

namespace zinf {

std::vector<double> RopeInverseFrequencies(const ModelConfig& config) {
  const int half = config.head_dim / 2;
  std::vector<double> inv_freq(half);
  for (int i = 0; i < half; ++i) {
    inv_freq[i] = 1.0 / std::pow(config.rope_theta, 2.0 * i / config.head_dim);
  }
  const RopeScaling& scaling = config.rope_scaling;
  switch (scaling.type) {
    case RopeScalingType::kNone: break;
    case RopeScalingType::kLinear:
      for (double& f : inv_freq) f /= scaling.factor;
      break;
    case RopeScalingType::kLlama3: {
      // Long wavelengths are slowed by `factor`, short ones kept, and the band between blended.
      const double old_context = scaling.original_max_position_embeddings;
      const double low_freq_wavelen = old_context / scaling.low_freq_factor;
      const double high_freq_wavelen = old_context / scaling.high_freq_factor;
      for (double& f : inv_freq) {
        const double wavelen = 2.0 * std::numbers::pi / f;
        if (wavelen < high_freq_wavelen) continue;
        if (wavelen > low_freq_wavelen) {
          f /= scaling.factor;
        } else {
          const double smooth = (old_context / wavelen - scaling.low_freq_factor) /
                                (scaling.high_freq_factor - scaling.low_freq_factor);
          f = (1.0 - smooth) * f / scaling.factor + smooth * f;
        }
      }
      break;
    }
  }
  return inv_freq;
}

RopeTables BuildRopeTables(const ModelConfig& config, int max_context) {
  const std::vector<double> inv_freq = RopeInverseFrequencies(config);
  const size_t half = inv_freq.size();
  RopeTables tables;
  tables.cos.resize(static_cast<size_t>(max_context) * half);
  tables.sin.resize(tables.cos.size());
  for (int position = 0; position < max_context; ++position) {
    for (size_t i = 0; i < half; ++i) {
      const double angle = position * inv_freq[i];
      tables.cos[position * half + i] = static_cast<float>(std::cos(angle));
      tables.sin[position * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  return tables;
}

}  // namespace zinf
