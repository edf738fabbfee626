// The CPU attention's inner loops: the AVX2 versions give the portable ones' bits for f32 and
// int8 caches, head sizes with and without a tail, key counts around the 4-key blocks; and the
// portable scores agree with a float64 dot product.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "engine/cpu_attention_rows.h"

namespace zinf {

TEST_CASE("attention rows: the AVX2 loops equal the portable ones bit for bit") {
  if (cpu::BestCpuIsa() < cpu::CpuIsa::kAvx2) {
    WARN("no AVX2 on this CPU: nothing to compare");
    return;
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int head_dim : {8, 13, 64, 100, 128}) {
    const int num_kv_heads = 2, kv_head = 1, max_keys = 23;
    const int64_t row_stride = int64_t{num_kv_heads} * head_dim;
    std::vector<float> f32(max_keys * row_stride), scales(max_keys * num_kv_heads), query(head_dim);
    std::vector<int8_t> i8(max_keys * row_stride);
    for (float& v : f32) v = normal(rng);
    for (int8_t& v : i8) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    for (float& v : scales) v = 0.01f + 0.001f * static_cast<float>(rng() % 100);
    for (float& v : query) v = normal(rng);
    for (bool int8_cache : {false, true}) {
      cpu::KvRows rows;
      rows.row_stride = row_stride;
      rows.num_kv_heads = num_kv_heads;
      if (int8_cache) {
        rows.i8 = i8.data();
        rows.scales = scales.data();
      } else {
        rows.f32 = f32.data();
      }
      for (int num_keys : {1, 3, 4, 5, 23}) {
        INFO("head_dim " << head_dim << " int8 " << int8_cache << " keys " << num_keys);
        std::vector<float> portable(num_keys), avx2(num_keys, -1.0f);
        cpu::ScoreKeys(query.data(), rows, kv_head, head_dim, num_keys, 0.125f, portable.data(),
                       cpu::CpuIsa::kPortable);
        cpu::ScoreKeys(query.data(), rows, kv_head, head_dim, num_keys, 0.125f, avx2.data(),
                       cpu::CpuIsa::kAvx2);
        CHECK(std::memcmp(portable.data(), avx2.data(), num_keys * sizeof(float)) == 0);
        if (!int8_cache) {
          double exact = 0;
          for (int d = 0; d < head_dim; ++d) exact += double{query[d]} * f32[row_stride * (num_keys - 1) + kv_head * head_dim + d];
          CHECK(portable[num_keys - 1] == Approx(exact * 0.125).epsilon(1e-4).margin(1e-5));
        }
        std::vector<float> out_portable(head_dim), out_avx2(head_dim, -1.0f);
        cpu::WeightValues(portable.data(), rows, kv_head, head_dim, num_keys, out_portable.data(),
                          cpu::CpuIsa::kPortable);
        cpu::WeightValues(portable.data(), rows, kv_head, head_dim, num_keys, out_avx2.data(),
                          cpu::CpuIsa::kAvx2);
        CHECK(std::memcmp(out_portable.data(), out_avx2.data(), head_dim * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace zinf
