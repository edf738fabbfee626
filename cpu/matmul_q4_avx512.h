// The int4-weight matrix product at the kAvx512 level (AVX-512 BW/VL/DQ + VNNI): the bits of the
// portable kernel in cpu/matmul_q4.cpp, with the nibble × int8 sums from vpdpbusd. Call it only
// when BestCpuIsa() is kAvx512 or above. Also the pieces the AMX kernel shares with it: the
// tokens in lanes, and rows of nibbles unpacked to bytes.
#pragma once

#include <cstdint>
#include <optional>

#include "cpu/q4_activations.h"
#include "cpu/q8_token_lanes.h"
#include "cpu/quant_rows.h"
#include "engine/backend.h"

namespace zinf::cpu {

// The rows of the 16-row tiles (cpu/matmul_q4_avx512_tiles.h): for a lone token, a stride apart,
// the streams its weights are read as.
constexpr int kQ4Avx512DecodeRows = 16;

// Tokens [token_begin, token_end) × rows [row_begin, row_end); token t's outputs at out + t ·
// out_stride.
void MatMulQ4Avx512(const Q4Activations& xa, int64_t token_begin, int64_t token_end,
                    const QuantRows& w, const Weight& bias, float* out, int64_t out_stride,
                    int64_t row_begin, int64_t row_end);

// How the kernel takes 7-8 tokens: the 16-row tiles (rows in the lanes, sums reduced across them)
// or the tokens in the lanes of 256-bit registers (no reduction; cheaper where a 512-bit operation
// is two 256-bit halves, as on Zen 4). Both give the same bits.
enum class Q4FewTokens { kRowTiles, kYmmLanes };
// The setting products use at a group size: pinned by PinQ4FewTokens, else measured once per
// process and group size (cpu/matmul_q4_avx512_choice.cpp).
Q4FewTokens CurrentQ4FewTokens(int group_size);
// Pins a setting for every group size (tests run each); nullopt returns to the measured ones. Not
// while products run.
void PinQ4FewTokens(std::optional<Q4FewTokens> setting);
// MatMulQ4Avx512 with a given setting (what the measurement times).
void MatMulQ4Avx512With(const Q4Activations& xa, int64_t token_begin, int64_t token_end,
                        const QuantRows& w, const Weight& bias, float* out, int64_t out_stride,
                        int64_t row_begin, int64_t row_end, Q4FewTokens few_tokens);

// What this kernel's 16-row tiles take at a group size: at most `tokens`, `tokens_per_pass` at a
// time over rows still in L1 (the AMX kernel leaves them the token counts they do in few passes).
struct Q4RowTiles {
  int64_t tokens;
  int64_t tokens_per_pass;
};
Q4RowTiles Q4RowTilesFor(int64_t group_size);

// Tokens [token_begin, token_end) of xa in lanes, 16 to a group (no bias, no scales).
Q8TokenLanes PackQ4TokenLanes(const Q4Activations& xa, int64_t token_begin, int64_t token_end);

// Bytes between unpacked rows: a row's nibbles as bytes, padded to 64.
int64_t Q4UnpackedStride(const QuantRows& w);
// Rows [row, row + rows) as one byte per element (0..15, in element order), `stride` apart: the
// blocks of 32 [block_begin, block_end) of each (block_begin even), block_begin's first.
void UnpackQ4Rows(const QuantRows& w, int64_t row, int rows, uint8_t* out, int64_t stride,
                  int64_t block_begin = 0, int64_t block_end = INT64_MAX);

}  // namespace zinf::cpu
