// Token lanes (cpu/q8_token_lanes.h): every byte and scale where the layout puts it, in groups of
// 16 and of 15 (the int8 AVX-512 kernel's), whole and partial: on AVX-512 CPUs groups of 9 to 16
// tokens are packed by 512-bit transposes, on AVX2 CPUs (and smaller groups on AVX-512 ones) by
// 256-bit transposes, lane by lane only on CPUs without AVX2.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "cpu/q8_activations.h"
#include "cpu/q8_token_lanes.h"
#include "tests/support/random_values.h"

namespace zinf {

TEST_CASE("token lanes: each token's values in its lane, biased, its scales beside them") {
  const int64_t blocks = 7;
  for (int64_t num_tokens : {int64_t{5}, int64_t{12}, int64_t{16}, int64_t{32}, int64_t{37}}) {
    const std::vector<float> x = testing::RandomValues(num_tokens * blocks * 32, 90 + num_tokens);
    std::vector<int8_t> values(num_tokens * blocks * 32);
    std::vector<float> scales(num_tokens * blocks);
    cpu::QuantizeTokensQ8(x.data(), blocks * 32, 0, num_tokens, blocks * 32, false,
                          {values.data(), scales.data(), blocks});
    for (int group_tokens : {16, 15}) {
      for (uint8_t bias : {uint8_t{0}, uint8_t{0x80}}) {
        for (bool with_scales : {true, false}) {
          const cpu::Q8Activations xq{values.data(), with_scales ? scales.data() : nullptr, blocks};
          const cpu::Q8TokenLanes lanes = cpu::PackQ8TokenLanes(xq, num_tokens, group_tokens, bias);
          INFO("tokens " << num_tokens << " group " << group_tokens << " bias " << int{bias}
                         << " scales " << with_scales);
          REQUIRE(lanes.groups == (num_tokens + group_tokens - 1) / group_tokens);
          for (int64_t group = 0; group < lanes.groups; ++group) {
            for (int64_t b = 0; b < blocks; ++b) {
              const auto* block = reinterpret_cast<const uint8_t*>(lanes.block(group, b));
              for (int lane = 0; lane < 16; ++lane) {
                const int64_t t = group * group_tokens + lane;
                const bool real = lane < group_tokens && t < num_tokens;
                for (int i = 0; i < 32; ++i) {
                  const int8_t value = real ? values[(t * blocks + b) * 32 + i] : 0;
                  const uint8_t expected = static_cast<uint8_t>(value) ^ bias;
                  INFO("group " << group << " block " << b << " lane " << lane << " value " << i);
                  REQUIRE(block[64 * (i / 4) + 4 * lane + i % 4] == expected);
                }
                const float scale = real && with_scales ? scales[t * blocks + b] : 0.0f;
                REQUIRE(lanes.scales(group, b)[lane] == scale);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace zinf
