// The layout both token-lane packings share (cpu/q8_token_lanes.h, cpu/i16_token_lanes.h): groups
// of up to 16 tokens, each group's blocks of 32 values one after another, then every group's
// block scales, 16 to a block, in a buffer the calling thread owns.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/q8_activations.h"
#include "cpu/tiling.h"

namespace zinf::cpu {

template <int64_t kValueBytesPerBlock>
struct TokenLaneBlocks {
  static constexpr int kLanes = 16;
  static constexpr int64_t kValueBytes = kValueBytesPerBlock;
  static constexpr int64_t kScaleBytes = kLanes * 4;
  static constexpr int64_t kBlockBytes = kValueBytes + kScaleBytes;

  const std::byte* data = nullptr;
  const float* block_scales = nullptr;
  int64_t blocks = 0;
  int group_tokens = 0;  // tokens per group, at most kLanes
  int64_t groups = 0;

  const std::byte* block(int64_t group, int64_t b) const {
    return data + (group * blocks + b) * kValueBytes;
  }
  const float* scales(int64_t group, int64_t b) const {
    return block_scales + (group * blocks + b) * kLanes;
  }
  // Tokens in `group` (the last may hold fewer).
  int tokens_in(int64_t group, int64_t num_tokens) const {
    const int64_t left = num_tokens - group * group_tokens;
    return static_cast<int>(left < group_tokens ? left : group_tokens);
  }
};

// Lanes for num_tokens tokens, `group_tokens` to a group, of `blocks` blocks each, in the calling
// thread's buffer for Lanes (64-byte aligned, only ever grown, valid until the thread's next call):
// the layout, and where a packing writes its values and scales.
template <typename Lanes>
struct LaidOutLanes {
  Lanes lanes;
  std::byte* values;
  float* scales;
};
template <typename Lanes>
LaidOutLanes<Lanes> LayOutTokenLanes(int64_t blocks, int64_t num_tokens, int group_tokens) {
  Lanes lanes;
  lanes.blocks = blocks;
  lanes.group_tokens = group_tokens;
  lanes.groups = (num_tokens + group_tokens - 1) / group_tokens;
  const int64_t all_blocks = lanes.groups * blocks;
  std::byte* values =
      AlignedThreadScratch<Lanes>(static_cast<size_t>(all_blocks * Lanes::kBlockBytes));
  auto* scales = reinterpret_cast<float*>(values + all_blocks * Lanes::kValueBytes);
  lanes.data = values;
  lanes.block_scales = scales;
  return {lanes, values, scales};
}

// Block b's scales of tokens [first_token, first_token + tokens) into `scales`' first lanes and
// 0 into the rest of its kLanes (all 0 when xq has no scales), as every packing writes them.
template <typename Lanes>
void CopyLaneScales(const Q8Activations& xq, int64_t first_token, int tokens, int64_t b,
                    float* scales) {
  for (int lane = 0; lane < Lanes::kLanes; ++lane) {
    scales[lane] =
        lane < tokens && xq.scales != nullptr ? xq.token_scales(first_token + lane)[b] : 0.0f;
  }
}

}  // namespace zinf::cpu
