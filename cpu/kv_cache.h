// The CPU backend's KV cache: for each layer, slot and position one row of kv_dim keys and one of
// values, stored as f32, as f16 (half the memory and half the bytes a decode step's attention
// reads) or as int8 with one f32 scale per (position, KV head) — a quarter of the memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cpu/zeroed_buffer.h"
#include "engine/backend.h"
#include "engine/dtype.h"

namespace zinf::cpu {

// How a cache's elements are stored: KvRows has the matching pointer set.
enum class KvElement : uint8_t { kF32, kF16, kI8 };

// One slot's keys or values from position 0: row j, head h starts at (j * row_stride + h *
// head_dim); int8 rows carry scales[j * num_kv_heads + h].
struct KvRows {
  const float* f32 = nullptr;     // set for f32 caches
  const uint16_t* f16 = nullptr;  // set for f16 caches (IEEE half bits)
  const int8_t* i8 = nullptr;     // set for int8 caches
  const float* scales = nullptr;  // int8 only
  int64_t row_stride = 0;
  int num_kv_heads = 0;

  // Element 0, whatever the element type.
  const void* data() const {
    if (f32 != nullptr) return f32;
    return f16 != nullptr ? static_cast<const void*>(f16) : static_cast<const void*>(i8);
  }
  KvElement element() const {
    return f32 != nullptr ? KvElement::kF32 : f16 != nullptr ? KvElement::kF16 : KvElement::kI8;
  }
  // Element `at`, as stored (an f16 one widened exactly, an int8 one before its scale).
  float value(int64_t at) const {
    if (f32 != nullptr) return f32[at];
    return f16 != nullptr ? F16ToF32(f16[at]) : static_cast<float>(i8[at]);
  }
  // The scale of row j, head h: 1 for an f32 or f16 cache.
  float scale(int j, int kv_head) const {
    return scales == nullptr ? 1.0f : scales[static_cast<int64_t>(j) * num_kv_heads + kv_head];
  }
};

class CpuKvCache {
 public:
  // Throws zinf::Error for a dtype other than f32, f16 or int8.
  void Allocate(const KvCacheShape& shape);
  // The bytes the cache holds (what the memory model's CpuKvCacheBytes promises).
  uint64_t allocated_bytes() const;
  const KvCacheShape& shape() const { return shape_; }

  // Writes one position's key and value rows (kv_dim floats each).
  void Store(int layer, int slot, int position, const float* key, const float* value);
  // Every chunk's tokens: row chunk.token_offset + i of keys / values (rows `row_stride` floats
  // apart) at position chunk.start_position + i of its slot. Throws past max_context.
  void StoreChunks(int layer, std::span<const SequenceChunk> chunks, const float* keys,
                   const float* values, int64_t row_stride);
  KvRows Keys(int layer, int slot) const { return Rows(keys_, key_scales_, layer, slot); }
  KvRows Values(int layer, int slot) const { return Rows(values_, value_scales_, layer, slot); }

 private:
  // Storage of one of keys / values: f32, f16 or int8 elements (int8's scales are kept apart).
  struct Storage {  // from a cache line, so a KV head's rows take as few lines as they can
    ZeroedBuffer<float> f32;
    ZeroedBuffer<uint16_t> f16;
    ZeroedBuffer<int8_t> i8;
  };
  int64_t RowIndex(int layer, int slot, int position) const;
  void StoreRow(Storage& storage, ZeroedBuffer<float>& scales, int64_t row, const float* values);
  KvRows Rows(const Storage& storage, const ZeroedBuffer<float>& scales, int layer, int slot) const;

  KvCacheShape shape_;
  int64_t kv_dim_ = 0;
  Storage keys_, values_;
  ZeroedBuffer<float> key_scales_, value_scales_;  // int8: [row][kv_head]
};

}  // namespace zinf::cpu
