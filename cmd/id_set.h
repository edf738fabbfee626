// IdSet: a compact set of request ids, so duplicate-id checks over a prompt file of millions of
// lines cost 20-40 bytes an id (short ids) instead of the ~85 of std::unordered_set<std::string>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/error.h"

namespace zinf::cli {

// Header-only so cmd/prompt_file.cpp stays self-contained (tests and fuzz targets compile it in).
// Ids are packed into one arena string ([uint32 length][bytes] each); an open-addressing table
// (linear probing, at most half full) holds for each id its arena offset and 32 bits of its hash,
// so most probes compare no bytes. Ownership: owns copies of the ids. Thread-safety: none. Failure:
// ZINF_CHECK when the arena would pass 4 GiB (hundreds of millions of ids).
class IdSet {
 public:
  // Adds `id`; false when it was already there.
  bool Insert(std::string_view id);
  bool Contains(std::string_view id) const;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t memory_bytes() const { return arena_.capacity() + slots_.capacity() * sizeof(uint64_t); }

 private:
  // The slot holding `id`, or the empty slot where it would go.
  size_t Find(std::string_view id, uint64_t hash) const;
  std::string_view IdAt(uint64_t slot) const;
  void Grow();

  std::string arena_;
  std::vector<uint64_t> slots_;  // 0: empty; else (hash >> 32) << 32 | (arena offset + 1)
  size_t size_ = 0;
};

namespace id_set_detail {

inline constexpr size_t kInitialSlots = 1024;  // a power of two: the probe wraps with a mask
inline constexpr uint64_t kOffsetMask = 0xFFFF'FFFFull;

inline uint64_t HashOf(std::string_view id) { return std::hash<std::string_view>{}(id); }

}  // namespace id_set_detail

inline std::string_view IdSet::IdAt(uint64_t slot) const {
  const size_t offset = static_cast<size_t>((slot & id_set_detail::kOffsetMask) - 1);
  uint32_t length = 0;
  std::memcpy(&length, arena_.data() + offset, sizeof(length));
  return std::string_view(arena_).substr(offset + sizeof(length), length);
}

inline size_t IdSet::Find(std::string_view id, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  const uint64_t tag = hash >> 32;
  for (size_t idx = hash & mask;; idx = (idx + 1) & mask) {
    const uint64_t slot = slots_[idx];
    if (slot == 0 || ((slot >> 32) == tag && IdAt(slot) == id)) return idx;
  }
}

inline bool IdSet::Contains(std::string_view id) const {
  return !slots_.empty() && slots_[Find(id, id_set_detail::HashOf(id))] != 0;
}

inline bool IdSet::Insert(std::string_view id) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const uint64_t hash = id_set_detail::HashOf(id);
  const size_t idx = Find(id, hash);
  if (slots_[idx] != 0) return false;
  const size_t offset = arena_.size();
  ZINF_CHECK(offset + sizeof(uint32_t) + id.size() < id_set_detail::kOffsetMask,
             "{} ids fill the 4 GiB id arena", size_);
  const auto length = static_cast<uint32_t>(id.size());
  arena_.append(reinterpret_cast<const char*>(&length), sizeof(length));
  arena_.append(id);
  slots_[idx] = (hash >> 32) << 32 | (offset + 1);
  ++size_;
  return true;
}

inline void IdSet::Grow() {
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(old.empty() ? id_set_detail::kInitialSlots : old.size() * 2, 0);
  for (const uint64_t slot : old) {
    if (slot != 0) slots_[Find(IdAt(slot), id_set_detail::HashOf(IdAt(slot)))] = slot;
  }
}

}  // namespace zinf::cli
