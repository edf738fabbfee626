// CpuKvCache: rows stored as given (f32), rounded to the nearest f16, or quantized per KV head
// (int8, symmetric).
#include "cpu/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <immintrin.h>

#include "cpu/isa.h"
#include "engine/error.h"

namespace zinf::cpu {

namespace {

#pragma GCC push_options
#pragma GCC target("avx2,f16c")

// ConvertFromF32's f16 bits, 8 at a time by F16C (rounding to nearest even as it does). F16C keeps
// a NaN's payload where F32ToF16 writes one quiet NaN, so 8 values holding a NaN go one by one.
void F32ToF16F16c(const float* src, uint16_t* dst, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      for (int j = 0; j < 8; ++j) dst[i + j] = F32ToF16(src[i + j]);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < count; ++i) dst[i] = F32ToF16(src[i]);
}

#pragma GCC pop_options

}  // namespace

void CpuKvCache::Allocate(const KvCacheShape& shape) {
  if (shape.dtype != DType::kF32 && shape.dtype != DType::kF16 && shape.dtype != DType::kI8) {
    Fail("KV cache dtype {} is not supported on the CPU; use f32, f16 or int8",
         DTypeName(shape.dtype));
  }
  shape_ = shape;
  kv_dim_ = static_cast<int64_t>(shape.num_kv_heads) * shape.head_dim;
  const size_t rows = static_cast<size_t>(shape.num_layers) * shape.num_slots * shape.max_context;
  const size_t elements = rows * static_cast<size_t>(kv_dim_);
  keys_ = {};
  values_ = {};
  key_scales_ = {};
  value_scales_ = {};
  if (shape.dtype == DType::kF32) {
    keys_.f32 = ZeroedBuffer<float>(elements);
    values_.f32 = ZeroedBuffer<float>(elements);
  } else if (shape.dtype == DType::kF16) {
    keys_.f16 = ZeroedBuffer<uint16_t>(elements);
    values_.f16 = ZeroedBuffer<uint16_t>(elements);
  } else {
    keys_.i8 = ZeroedBuffer<int8_t>(elements);
    values_.i8 = ZeroedBuffer<int8_t>(elements);
    key_scales_ = ZeroedBuffer<float>(rows * shape.num_kv_heads);
    value_scales_ = ZeroedBuffer<float>(rows * shape.num_kv_heads);
  }
}

int64_t CpuKvCache::RowIndex(int layer, int slot, int position) const {
  return (static_cast<int64_t>(layer) * shape_.num_slots + slot) * shape_.max_context + position;
}

void CpuKvCache::StoreRow(Storage& storage, ZeroedBuffer<float>& scales, int64_t row,
                          const float* values) {
  if (shape_.dtype == DType::kF32) {
    std::memcpy(storage.f32.data() + row * kv_dim_, values, kv_dim_ * sizeof(float));
    return;
  }
  if (shape_.dtype == DType::kF16) {
    uint16_t* out = storage.f16.data() + row * kv_dim_;
    static const bool f16c = ActiveCpuIsa() >= CpuIsa::kAvx2;
    if (f16c) {
      F32ToF16F16c(values, out, kv_dim_);
    } else {
      ConvertFromF32(DType::kF16, values, out, static_cast<size_t>(kv_dim_));
    }
    return;
  }
  for (int h = 0; h < shape_.num_kv_heads; ++h) {
    const float* head = values + static_cast<int64_t>(h) * shape_.head_dim;
    int8_t* out = storage.i8.data() + row * kv_dim_ + static_cast<int64_t>(h) * shape_.head_dim;
    float max_abs = 0;
    for (int d = 0; d < shape_.head_dim; ++d) max_abs = std::max(max_abs, std::fabs(head[d]));
    scales.data()[row * shape_.num_kv_heads + h] = max_abs / 127.0f;
    const float inverse = max_abs > 0 ? 127.0f / max_abs : 0.0f;
    for (int d = 0; d < shape_.head_dim; ++d) {
      out[d] = static_cast<int8_t>(std::clamp(std::nearbyint(head[d] * inverse), -127.0f, 127.0f));
    }
  }
}

void CpuKvCache::Store(int layer, int slot, int position, const float* key, const float* value) {
  const int64_t row = RowIndex(layer, slot, position);
  StoreRow(keys_, key_scales_, row, key);
  StoreRow(values_, value_scales_, row, value);
}

KvRows CpuKvCache::Rows(const Storage& storage, const ZeroedBuffer<float>& scales, int layer,
                        int slot) const {
  const int64_t row = RowIndex(layer, slot, 0);
  KvRows rows;
  rows.row_stride = kv_dim_;
  rows.num_kv_heads = shape_.num_kv_heads;
  if (shape_.dtype == DType::kF32) {
    rows.f32 = storage.f32.data() + row * kv_dim_;
  } else if (shape_.dtype == DType::kF16) {
    rows.f16 = storage.f16.data() + row * kv_dim_;
  } else {
    rows.i8 = storage.i8.data() + row * kv_dim_;
    rows.scales = scales.data() + row * shape_.num_kv_heads;
  }
  return rows;
}

void CpuKvCache::StoreChunks(int layer, std::span<const SequenceChunk> chunks, const float* keys,
                             const float* values, int64_t row_stride) {
  for (const SequenceChunk& chunk : chunks) {
    ZINF_CHECK(chunk.start_position + chunk.num_tokens <= shape_.max_context,
               "sequence of {} positions exceeds the KV cache ({})",
               chunk.start_position + chunk.num_tokens, shape_.max_context);
    for (int i = 0; i < chunk.num_tokens; ++i) {
      const int64_t row = chunk.token_offset + i;
      Store(layer, chunk.kv_slot, chunk.start_position + i, keys + row * row_stride,
            values + row * row_stride);
    }
  }
}

uint64_t CpuKvCache::allocated_bytes() const {
  return keys_.f32.bytes() + values_.f32.bytes() + keys_.f16.bytes() + values_.f16.bytes() +
         keys_.i8.bytes() + values_.i8.bytes() + key_scales_.bytes() + value_scales_.bytes();
}

}  // namespace zinf::cpu
