// The AVX-512 float matmul kernel for several tokens (prefill, batches): same arithmetic as the
// AVX2 and portable kernels, so the same bits, at twice the width.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/backend.h"

namespace zinf::cpu {

// How the kernel walks its rows and tokens. What is fastest differs by CPU (an Emerald Rapids guest ran
// f16 at half its f32 rate converting in every tile, a Zen 4 one at full rate; spans won on the
// one, whole rows on the other), so each process measures spans and widening on its first product;
// every setting computes the same bits.
struct PairTiling {
  // Row groups whose weights, as the tiles read them, exceed twice this many bytes are done in
  // spans of about this size, so that a span stays in L1 while every pair tile passes; 0: whole
  // rows. Emerald Rapids: 16 KiB spans ~1.07x faster (one thread, 128 tokens, 768 x 2048 and
  // 2048 x 5632); Zen 4: whole rows ~1.1x faster than 16 KiB spans (1B-shape rows).
  int64_t span_bytes = int64_t{16} << 10;
  bool widen_f16 = false;   // f16 rows widened to f32 a span at a time, not in every tile
  bool widen_bf16 = false;  // the same for bf16
  // Token pairs per block, in bytes: more of the 2 MiB L2 than the AVX2 kernels' blocks
  // (cpu/tiling.h's TokenBlockBytes), since every block pass reads the weights again: 1.1B-shape
  // prefill 1.05x faster than with 768 KiB, 110M unchanged. Not measured per CPU (320 KiB-1.6 MiB
  // were within 5% of each other on an Emerald Rapids guest); tests pin small blocks.
  int64_t block_bytes = int64_t{1280} << 10;
  // Rows are widened a span at a time (widen_f16, widen_bf16) only where a block holds at least
  // this many pair tiles to share them; with fewer, each tile converts (cpu/matmul_avx512.cpp).
  int64_t widen_min_tiles = 3;
};

// The tiling products use: pinned by PinPairTiling, else measured once per process.
PairTiling CurrentPairTiling();
// Pins a tiling (tests run every one); nullopt returns to the measured one. Not while products run.
void PinPairTiling(std::optional<PairTiling> tiling);

// A cache line of token pairs (one chunk of one pair). Buffers of pairs are 64-byte aligned, so
// that no load of a chunk straddles two lines: 16 bytes off (where a large std::vector<float>
// lands) the kernel ran 1.04-1.15x slower (Emerald Rapids, 1-2 threads, 768- to 5632-wide rows).
struct alignas(64) TokenPairLine {
  float floats[16];
};
// The floats of a run of lines: a cast, not a member access (rows shorter than 8 pack no line, and
// an empty buffer's data() may be null).
inline float* FloatsOf(TokenPairLine* lines) { return reinterpret_cast<float*>(lines); }
inline const float* FloatsOf(const TokenPairLine* lines) {
  return reinterpret_cast<const float*>(lines);
}

// Where the kernel finds x laid out as token pairs: `pairs` packed once for every thread
// (PackTokenPairsAvx512), or, where null, packed by each thread for itself and reused while
// x_version (cpu/matmul.h) says x is unchanged.
struct TokenPairSource {
  uint64_t x_version = 0;
  const TokenPairLine* pairs = nullptr;
};

// MatMulRows for f32/f16/bf16 weights and num_tokens ≥ 2, on a CPU with AVX-512 F/BW/VL/DQ.
void MatMulRowsAvx512(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                      const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                      int64_t row_end, TokenPairSource pairs_from);
// The same with a given tiling (what the measurement times).
void MatMulRowsAvx512Tiled(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                           const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                           int64_t row_end, TokenPairSource pairs_from, const PairTiling& tiling);

// The lines num_tokens tokens of `cols` columns take as token pairs.
int64_t TokenPairLines(int64_t num_tokens, int64_t cols);
// Pairs [pair_begin, pair_end) (tokens 2·pair_begin .. 2·pair_end − 1) of x written into `pairs`
// (TokenPairLines long), where the kernel reads them: each of a pool's threads can pack a share.
void PackTokenPairsAvx512(const float* x, int64_t x_stride, int64_t num_tokens, int64_t cols,
                          int64_t pair_begin, int64_t pair_end, TokenPairLine* pairs);

}  // namespace zinf::cpu
