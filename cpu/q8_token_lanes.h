// Quantized activations with the tokens in the lanes, for the int8 kernels that multiply one
// weight dword against 16 tokens at once: AVX-512's vpdpbusd with a broadcast weight operand, and
// AMX's B tile. Both take the same layout, AMX's VNNI one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/q8_activations.h"
#include "cpu/token_lane_blocks.h"

namespace zinf::cpu {

// Per group of up to 16 tokens and per block of 32 values: 8 rows of 64 bytes, where row k4 holds
// in lane t (bytes 4t..4t+3) the token's values 4·k4..4·k4+3. A group's blocks follow one another
// with nothing between them, so two consecutive blocks are one 16-row B tile of 64 values (the int4
// AMX kernel's groups of 64). The 16 tokens' block scales lie apart, after every group's values.
// Lanes past the group's tokens hold the value 0 and scale 0. Every value byte is XORed with the
// packing's bias: 0x80 gives x + 128 as an unsigned byte (vpdpbusd's unsigned operand).
struct Q8TokenLanes : TokenLaneBlocks<8 * 64> {};

// Packs tokens [0, num_tokens) of xq, `group_tokens` to a group, into a 64-byte-aligned buffer
// owned by the calling thread: only ever grown, valid until the thread's next call. xq.scales may
// be null (the int4 kernels read their group scales elsewhere): the block scales are then 0.
Q8TokenLanes PackQ8TokenLanes(const Q8Activations& xq, int64_t num_tokens, int group_tokens,
                              uint8_t bias);

}  // namespace zinf::cpu
