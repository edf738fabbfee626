// The AVX2 attention loops for a block of queries over one KV head (cpu_attention_rows_avx512.h's
// QueryBlock: consecutive tokens of one head, or the query heads sharing a KV head at one token):
// each key and value row loaded serves 4 queries at a time, one query per 256-bit register, while
// every query keeps the operation sequence of cpu_attention_rows.h's single-query loops, so the
// bits are the same.
#pragma once

#include <cstdint>

#include "cpu/attention_rows_avx512.h"
#include "cpu/kv_cache.h"

namespace zinf::cpu {

// ScoreKeys for each query of the block, all over keys [0, last_num_keys()): query q's at scores
// + q · score_stride (past its own keys, values it ignores). Rows are written 4 queries at a time,
// up to last_num_keys() rounded up to 2 (keys are scored 2 at a time): there must be room for
// kAttentionBlockQueries rows and for that many keys in each.
void ScoreKeysBlockAvx2(const QueryBlock& block, const KvRows& keys, float scale, float* scores,
                        int64_t score_stride);

// WeightValues for each query of the block over its own keys, query q's weights at weights + q ·
// weight_stride and its output at out + q · out_stride: per 4 queries the keys all of them see are
// accumulated together, then each query's further ones, in position order.
void WeightValuesBlockAvx2(const QueryBlock& block, const float* weights, int64_t weight_stride,
                           const KvRows& values, float* out, int64_t out_stride);

}  // namespace zinf::cpu
