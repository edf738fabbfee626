// What the AMX kernels (int8 and int4) share: one tile configuration for products of 16 weight
// rows × 16 tokens × a block of 32 values, and the compiler barrier their tile loads and stores
// need.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace zinf::cpu {

// GCC 12's tile load and store intrinsics are asm statements with neither a memory operand nor a
// "memory" clobber, so the compiler is not told that they read or write memory. This barrier goes
// before each tile load (the bytes it reads were written in C++) and after each tile store (its
// sums are read in C++).
#define ZINF_TILE_MEMORY_BARRIER() __asm__ volatile("" ::: "memory")

// Weight rows and token lanes per tile product.
inline constexpr int kAmxTileRows = 16;
inline constexpr int kAmxGroupTokens = 16;
// Below this many tokens the 16-lane tiles are mostly padding: the AVX-512 kernels are faster.
inline constexpr int64_t kMinAmxTokens = 5;
// Blocks per span: 16 rows × 512 bytes of (unpacked) weights stay in L1 while the token groups
// pass.
inline constexpr int64_t kAmxSpanBlocks = 16;

// The tile configuration (palette 1) as _tile_loadconfig reads it.
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// tmm0/1 A (16 weight rows × k_bytes), tmm2/3 B (k_bytes / 4 rows × 64 bytes: k_bytes values of 16
// tokens in lanes, cpu/q8_token_lanes.h), tmm4/5 C (16 × 16 int32). A tdpbusd at K = 64 costs far
// less than two at K = 32 (Emerald Rapids, bench/amx_tile_cost.cpp), so the int4 kernel takes 64
// where its groups allow.
template <int k_bytes>
const AmxTileConfig& AmxTileConfigFor() {
  static_assert(k_bytes == 32 || k_bytes == 64);
  static const AmxTileConfig config = [] {
    AmxTileConfig c;
    for (int a : {0, 1}) {
      c.rows[a] = 16;
      c.bytes_per_row[a] = k_bytes;
    }
    for (int b : {2, 3}) {
      c.rows[b] = k_bytes / 4;
      c.bytes_per_row[b] = 64;
    }
    for (int t : {4, 5}) {
      c.rows[t] = 16;
      c.bytes_per_row[t] = 64;
    }
    return c;
  }();
  return config;
}

// One block of 32 values per product: the int8 kernel (its activation scales are per block).
inline const AmxTileConfig& AmxBlockTileConfig() { return AmxTileConfigFor<32>(); }

}  // namespace zinf::cpu
