// The CPU KV cache in f16 (cpu/kv_cache.h): each stored element is F32ToF16 of the value given,
// whichever way the CPU converts (F16C 8 at a time where it has AVX2, one by one otherwise); its
// buffers, and the backend's activations, start on cache lines.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/kv_cache.h"
#include "engine/dtype.h"
#include "tests/support/random_values.h"

namespace zinf {

TEST_CASE("f16 KV cache: every element stored as F32ToF16 rounds it, NaNs, infinities and all") {
  // 3 heads of 7: rows of 21, so a row ends with a part of 8 converted one by one.
  const KvCacheShape shape{2, 2, 4, 3, 7, DType::kF16};
  cpu::CpuKvCache cache;
  cache.Allocate(shape);
  const int64_t kv_dim = 21;
  std::vector<float> key = testing::RandomValues(kv_dim, 81);
  std::vector<float> value = testing::RandomValues(kv_dim, 82);
  const float inf = std::numeric_limits<float>::infinity();
  uint32_t payload_nan_bits = 0x7fbfffffu;  // a NaN whose payload F16C would keep
  float payload_nan;
  std::memcpy(&payload_nan, &payload_nan_bits, 4);
  const float specials[] = {
      0.0f,    -0.0f,       inf,   -inf,  65519.0f,           65520.0f,          -7e-8f, 3e-8f,
      6.1e-5f, payload_nan, 1e-3f, -2.5f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048};  // ties: to even
  for (size_t i = 0; i < std::size(specials); ++i) key[i] = specials[i];
  value[17] = std::numeric_limits<float>::quiet_NaN();
  cache.Store(1, 1, 2, key.data(), value.data());
  const cpu::KvRows keys = cache.Keys(1, 1), values = cache.Values(1, 1);
  REQUIRE(keys.f16 != nullptr);
  for (int64_t i = 0; i < kv_dim; ++i) {
    INFO("element " << i << " key " << key[i] << " value " << value[i]);
    CHECK(keys.f16[2 * keys.row_stride + i] == F32ToF16(key[i]));
    CHECK(values.f16[2 * values.row_stride + i] == F32ToF16(value[i]));
  }
}

TEST_CASE("CPU KV cache and activations start on cache lines") {
  // Large buffers from malloc land 16 bytes past a line; a KV head's rows would then take a line
  // more than they need (cpu/zeroed_buffer.h). Sizes past glibc's mmap threshold.
  const auto line_offset = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 64; };
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8}) {
    cpu::CpuKvCache cache;
    cache.Allocate({2, 2, 512, 4, 128, dtype});
    const cpu::KvRows keys = cache.Keys(0, 0), values = cache.Values(0, 0);
    INFO(DTypeName(dtype));
    CHECK(line_offset(keys.data()) == 0);
    CHECK(line_offset(values.data()) == 0);
  }
  cpu::CpuBackend backend(1);
  for (int64_t rows : {1, 7, 512})
    CHECK(line_offset(backend.AllocateActivation(rows, 768).data) == 0);
}

}  // namespace zinf
