// Prefill scores from keys transposed per KV head: 16 keys at a time, dimension by dimension, so
// one register holds a dimension of 16 keys, a query's 8-lane chains are 8 registers over 16 keys,
// and their reduction is vertical adds in ReduceLanes' order (no shuffles, 16 scores per store).
// A thread transposes a head's keys once per attention call for every query block it scores.
#pragma once

#include <cstdint>

#include "cpu/attention_rows_avx512.h"
#include "cpu/kv_cache.h"

namespace zinf::cpu {

// A number no earlier attention call had: a transposed copy is valid only within its call (the
// next call may find new rows at the same addresses).
uint64_t NewAttentionCall();

// ScoreKeysBlockAvx512's scores, the same bits, for a block of consecutive tokens (keys_step 1)
// at an AVX-512 level: keys [0, last_num_keys()) rounded up to 16 are scored (score_stride must
// have room), rows [0, num_queries) written. The sequence's cache holds available_keys keys (≥
// last_num_keys()): a thread transposes ahead up to those. `call` is the attention call's
// NewAttentionCall().
void ScoreKeysTransposedAvx512(const QueryBlock& block, const KvRows& keys, int available_keys,
                               uint64_t call, float scale, float* scores, int64_t score_stride);

}  // namespace zinf::cpu
