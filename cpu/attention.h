// Causal attention over the KV cache for the CPU backend (prefill chunks and decode alike).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "cpu/isa.h"
#include "cpu/kv_cache.h"
#include "cpu/thread_pool.h"
#include "engine/backend.h"

namespace zinf::cpu {

struct AttentionArgs {
  std::span<const SequenceChunk> chunks;
  const float* q = nullptr;  // [tokens, num_heads * head_dim]
  int64_t q_stride = 0;
  float* out = nullptr;  // [tokens, num_heads * head_dim]
  int64_t out_stride = 0;
  AttentionShape shape;
  // A slot's keys / values from position 0.
  std::function<KvRows(int)> k_slot;
  std::function<KvRows(int)> v_slot;
};

// Each query token attends to positions 0..its own; each (token, head) is computed by one thread
// in a fixed order, so results do not depend on the batch. Runs at ActiveCpuIsa() unless `isa`
// says otherwise (tests compare the levels); every level gives the same bits.
void CausalAttention(ThreadPool& pool, const AttentionArgs& args, CpuIsa isa = ActiveCpuIsa());

}  // namespace zinf::cpu
