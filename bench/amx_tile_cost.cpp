// What an AMX int8 tile product costs at K = 32 and K = 64 bytes per row, alone and with its tile
// loads (the int4 kernel's choice of 64 values per tdpbusd, cpu/matmul_q4_amx.cpp, rests on it).
// Not part of the build; from the repository root, on a machine with AMX:
//   g++ -std=c++20 -O2 -I. -mamx-tile -mamx-int8 bench/amx_tile_cost.cpp -o /tmp/amx_tile_cost
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "cpu/amx_tiles.h"

namespace {

// The kernels' configuration: A 16 rows × K bytes, B K/4 rows × 64 bytes, C 16 × 16 int32.
template <int K>
void Configure() {
  _tile_loadconfig(&zinf::cpu::AmxTileConfigFor<K>());
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ns per tdpbusd with its operands already in tiles, `chains` (1 or 2) independent accumulators.
template <int K>
double ProductOnly(int chains) {
  Configure<K>();
  std::vector<int8_t> data(4096, 1);
  _tile_loadd(0, data.data(), 64);
  _tile_loadd(1, data.data(), 64);
  _tile_loadd(2, data.data(), 64);
  _tile_loadd(3, data.data(), 64);
  _tile_zero(4);
  _tile_zero(5);
  const long n = 4000000;
  const auto start = std::chrono::steady_clock::now();
  if (chains == 1) {
    for (long i = 0; i < n; ++i) _tile_dpbusd(4, 0, 2);
  } else {
    for (long i = 0; i < n / 2; ++i) {
      _tile_dpbusd(4, 0, 2);
      _tile_dpbusd(5, 1, 3);
    }
  }
  const double ns = Seconds(start) / n * 1e9;
  _tile_release();
  return ns;
}

// ns per 32 values of K with both tiles loaded for every product, as the kernel does: A from 16
// rows `cols` bytes apart, B from consecutive token-lane blocks, 8 token groups over each span.
template <int K>
double WithLoads(int64_t cols) {
  Configure<K>();
  const int groups = 8;
  std::vector<int8_t> a(16 * cols, 3), b(cols * 16 * groups, 5);
  alignas(64) int32_t sums[16][16];
  long products = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 400; ++rep) {
    for (int64_t span = 0; span < cols; span += 512) {
      for (int g = 0; g < groups; ++g) {
        const int8_t* lanes = b.data() + g * cols * 16;
        _tile_zero(4);
        for (int64_t k = span; k < span + 512 && k < cols; k += K, ++products) {
          _tile_loadd(0, a.data() + k, cols);
          _tile_loadd(2, lanes + k * 16, 64);
          _tile_dpbusd(4, 0, 2);
        }
        _tile_stored(4, sums, 64);
      }
    }
  }
  const double ns = Seconds(start) / products * 1e9 / (K / 32.0);
  _tile_release();
  return ns;
}

}  // namespace

int main() {
  constexpr long kArchRequestPermission = 0x1023, kXfeatureTileData = 18;
  if (syscall(SYS_arch_prctl, kArchRequestPermission, kXfeatureTileData) != 0) {
    std::fprintf(stderr, "amx_tile_cost: the kernel refused AMX tile data (no AMX here?)\n");
    return 1;
  }
  for (int chains : {1, 2})
    std::printf("tdpbusd alone, %d chain(s): K=32 %.2f ns, K=64 %.2f ns per instruction\n", chains,
                ProductOnly<32>(chains), ProductOnly<64>(chains));
  std::printf("with tile loads, 2048-byte rows: K=32 %.2f ns, K=64 %.2f ns per 32 values\n",
              WithLoads<32>(2048), WithLoads<64>(2048));
  return 0;
}
