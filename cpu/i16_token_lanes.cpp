// Packing int8 activations into 16-bit token lanes (cpu/i16_token_lanes.h).
#include "cpu/i16_token_lanes.h"

#include <cstring>

namespace zinf::cpu {

I16TokenLanes PackI16TokenLanes(const Q8Activations& xq, int64_t num_tokens) {
  const auto [lanes, out, all_scales] =
      LayOutTokenLanes<I16TokenLanes>(xq.blocks, num_tokens, I16TokenLanes::kLanes);
  for (int64_t group = 0; group < lanes.groups; ++group) {
    const int tokens = lanes.tokens_in(group, num_tokens);
    const int64_t first_token = group * I16TokenLanes::kLanes;
    for (int64_t b = 0; b < xq.blocks; ++b) {
      auto* steps =
          reinterpret_cast<int16_t*>(out + (group * xq.blocks + b) * I16TokenLanes::kValueBytes);
      float* scales = all_scales + (group * xq.blocks + b) * I16TokenLanes::kLanes;
      if (tokens < I16TokenLanes::kLanes) std::memset(steps, 0, I16TokenLanes::kValueBytes);
      for (int lane = 0; lane < I16TokenLanes::kLanes; ++lane) {
        if (lane >= tokens) {
          scales[lane] = 0.0f;
          continue;
        }
        const int8_t* values = xq.token_values(first_token + lane) + b * kQ8BlockElements;
        for (int j = 0; j < I16TokenLanes::kSteps; ++j) {
          steps[j * 32 + 2 * lane] = values[2 * j];
          steps[j * 32 + 2 * lane + 1] = values[2 * j + 1];
        }
        scales[lane] = xq.token_scales(first_token + lane)[b];
      }
    }
  }
  return lanes;
}

}  // namespace zinf::cpu
