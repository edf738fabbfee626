// Packing quantized activations into token lanes (cpu/q8_token_lanes.h).
#include "cpu/q8_token_lanes.h"

#include <cstring>

#include "cpu/tiling.h"

namespace zinf::cpu {

Q8TokenLanes PackQ8TokenLanes(const Q8Activations& xq, int64_t num_tokens, int group_tokens,
                              uint8_t bias) {
  Q8TokenLanes lanes;
  lanes.blocks = xq.blocks;
  lanes.group_tokens = group_tokens;
  lanes.groups = (num_tokens + group_tokens - 1) / group_tokens;
  const int64_t blocks = lanes.groups * xq.blocks;
  std::byte* out =
      AlignedThreadScratch<Q8TokenLanes>(static_cast<size_t>(blocks * Q8TokenLanes::kBlockBytes));
  lanes.data = out;
  auto* all_scales = reinterpret_cast<float*>(out + blocks * Q8TokenLanes::kValueBytes);
  lanes.block_scales = all_scales;
  uint32_t bias4;
  std::memset(&bias4, bias, 4);
  for (int64_t group = 0; group < lanes.groups; ++group) {
    const int tokens = lanes.tokens_in(group, num_tokens);
    for (int64_t b = 0; b < xq.blocks; ++b) {
      std::byte* block = out + (group * xq.blocks + b) * Q8TokenLanes::kValueBytes;
      std::memset(block, bias, Q8TokenLanes::kValueBytes);
      float* scales = all_scales + (group * xq.blocks + b) * Q8TokenLanes::kLanes;
      for (int lane = 0; lane < Q8TokenLanes::kLanes; ++lane) {
        if (lane >= tokens) {
          scales[lane] = 0.0f;
          continue;
        }
        const int64_t t = group * group_tokens + lane;
        const int8_t* values = xq.token_values(t) + b * kQ8BlockElements;
        for (int k4 = 0; k4 < 8; ++k4) {
          uint32_t word;
          std::memcpy(&word, values + 4 * k4, 4);
          word ^= bias4;
          std::memcpy(block + 64 * k4 + 4 * lane, &word, 4);
        }
        scales[lane] = xq.scales != nullptr ? xq.token_scales(t)[b] : 0.0f;
      }
    }
  }
  return lanes;
}

}  // namespace zinf::cpu
