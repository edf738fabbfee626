// 16-bit token lanes (cpu/i16_token_lanes.h): every value sign-extended where the layout puts it,
// zeros and zero scales past the last token, in whole and partial groups.
#include <catch2/catch.hpp>

#include <vector>

#include "cpu/i16_token_lanes.h"
#include "cpu/q8_activations.h"
#include "tests/cpu/isa_levels.h"
#include "tests/support/random_values.h"

namespace zinf {

TEST_CASE("16-bit token lanes: each token's value pairs in its lane, its scales beside them",
          "[avx2]") {
  testing::RequireCpuIsa(cpu::CpuIsa::kAvx2);  // packed by AVX2 transposes, for the AVX2 kernel
  const int64_t blocks = 5;
  for (int64_t num_tokens : {int64_t{3}, int64_t{8}, int64_t{16}, int64_t{21}}) {
    std::vector<float> x = testing::RandomValues(num_tokens * blocks * 32, 70 + num_tokens);
    x[0] = -1e3f;  // the first block's −127
    std::vector<int8_t> values(num_tokens * blocks * 32);
    std::vector<float> scales(num_tokens * blocks);
    cpu::QuantizeTokensQ8(x.data(), blocks * 32, 0, num_tokens, blocks * 32, false,
                          {values.data(), scales.data(), blocks});
    REQUIRE(values[0] == -127);
    const cpu::I16TokenLanes lanes =
        cpu::PackI16TokenLanes({values.data(), scales.data(), blocks}, num_tokens);
    REQUIRE(lanes.groups == (num_tokens + 15) / 16);
    for (int64_t group = 0; group < lanes.groups; ++group) {
      for (int64_t b = 0; b < blocks; ++b) {
        const auto* block = reinterpret_cast<const int16_t*>(lanes.block(group, b));
        for (int lane = 0; lane < 16; ++lane) {
          const int64_t t = group * 16 + lane;
          const bool real = t < num_tokens;
          INFO("tokens " << num_tokens << " group " << group << " block " << b << " lane " << lane);
          for (int i = 0; i < 32; ++i) {
            const int16_t expected = real ? values[(t * blocks + b) * 32 + i] : 0;
            REQUIRE(block[32 * (i / 2) + 2 * lane + i % 2] == expected);
          }
          REQUIRE(lanes.scales(group, b)[lane] == (real ? scales[t * blocks + b] : 0.0f));
        }
      }
    }
  }
}

}  // namespace zinf
