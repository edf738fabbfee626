// The int8 kernels' activation quantizer (cpu/q8_activations.h): blocks within half a step of
// their scale, zero-padded, special values handled, and the AVX2 version writing the portable
// bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/q8_activations.h"
#include "tests/cpu/isa_levels.h"
#include "tests/support/random_values.h"

namespace zinf {

using testing::RandomValues;

TEST_CASE("int8 activation blocks: within half a step of each block's scale, zero-padded") {
  for (int64_t cols : {1, 5, 31, 32, 33, 64, 100, 172, 768}) {
    std::vector<float> x = RandomValues(cols, 21 + cols);
    // A block of zeros and a block a million times smaller than the rest.
    if (cols >= 96) {
      for (int64_t c = 32; c < 64; ++c) x[c] = 0.0f;
      for (int64_t c = 64; c < 96; ++c) x[c] *= 1e-6f;
    }
    const int64_t blocks = cpu::Q8Blocks(cols);
    std::vector<int8_t> values(blocks * cpu::kQ8BlockElements, 99);
    std::vector<float> scales(blocks, -1.0f);
    cpu::QuantizeRowQ8(x.data(), cols, values.data(), scales.data(), false);
    for (int64_t b = 0; b < blocks; ++b) {
      float max_abs = 0;
      for (int64_t c = b * 32; c < std::min(cols, b * 32 + 32); ++c)
        max_abs = std::max(max_abs, std::fabs(x[c]));
      CHECK(scales[b] == max_abs / 127.0f);
    }
    for (int64_t c = 0; c < cols; ++c) {
      INFO("cols " << cols << " col " << c);
      CHECK(values[c] >= -127);
      CHECK(std::fabs(values[c] * scales[c / 32] - x[c]) <= scales[c / 32] * 0.5001f);
    }
    for (int64_t c = cols; c < blocks * 32; ++c) CHECK(values[c] == 0);
  }
}

TEST_CASE("int8 activation blocks: the AVX2 quantizer writes the portable one's bytes", "[avx2]") {
  testing::RequireCpuIsa(cpu::CpuIsa::kAvx2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t cols : {1, 5, 31, 32, 33, 64, 100, 172, 768, 2048}) {
    for (uint32_t seed = 0; seed < 4; ++seed) {
      std::vector<float> x = RandomValues(cols, 31 + seed, seed == 3 ? 1e4f : 1.0f);
      // Ties at x · 127 / max = k + 0.5 (round to even), a max hit exactly, specials.
      if (cols >= 8) {
        x[0] = 127.0f;
        x[1] = 0.5f;
        x[2] = -2.5f;
        x[3] = -0.0f;
      }
      if (seed == 1 && cols > 40) x[40] = nan;
      if (seed == 2 && cols > 40) x[40] = -inf;
      if (seed == 2 && cols > 70) {  // a block too small to invert: zeros with a zero scale
        std::fill(x.begin() + 64, x.begin() + std::min<int64_t>(cols, 96), 1e-35f);
      }
      const int64_t blocks = cpu::Q8Blocks(cols);
      std::vector<int8_t> portable(blocks * 32, 1), avx2(blocks * 32, 2);
      std::vector<float> portable_scales(blocks), avx2_scales(blocks);
      cpu::QuantizeRowQ8(x.data(), cols, portable.data(), portable_scales.data(), false);
      cpu::QuantizeRowQ8(x.data(), cols, avx2.data(), avx2_scales.data(), true);
      INFO("cols " << cols << " seed " << seed);
      CHECK(portable == avx2);
      CHECK(std::memcmp(portable_scales.data(), avx2_scales.data(), blocks * sizeof(float)) == 0);
      if ((seed == 1 || seed == 2) && cols > 40)
        CHECK(std::isnan(portable_scales[1]));  // NaN, −inf
      if (seed == 2 && cols >= 96) CHECK(portable_scales[2] == 0.0f);
    }
  }
}

}  // namespace zinf
