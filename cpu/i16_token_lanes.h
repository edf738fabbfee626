// int8 activations widened to 16 bits with the tokens in the lanes, for the AVX2 int8 kernel that
// multiplies a row's pair of weights against 16 tokens' pairs with madd (cpu/matmul_i8_avx2_lanes.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/q8_activations.h"
#include "cpu/token_lane_blocks.h"

namespace zinf::cpu {

// Per group of up to 16 tokens and per block of 32 values: 16 steps of 64 bytes, where step j
// holds in lane t (bytes 4t..4t+3) the token's values 2j and 2j+1 as int16, so each 256-bit half
// covers 8 tokens. A group's blocks follow one another; the 16 tokens' block scales lie apart,
// after every group's values. Lanes past the group's tokens hold 0 with scale 0.
struct I16TokenLanes : TokenLaneBlocks<16 * 64> {
  static constexpr int kSteps = kQ8BlockElements / 2;
};

// Packs tokens [0, num_tokens) of xq, by AVX2 instructions (the caller checks that the CPU has
// them), into a 64-byte-aligned buffer owned by the calling thread: only ever grown, valid until
// the thread's next call.
I16TokenLanes PackI16TokenLanes(const Q8Activations& xq, int64_t num_tokens);

}  // namespace zinf::cpu
