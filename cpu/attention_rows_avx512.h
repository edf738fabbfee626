// The AVX-512 attention loops for a block of queries over one KV head — consecutive tokens of one
// head (prefill), or the query heads sharing a KV head at one token (decode with grouped-query
// attention): each key and value row loaded once serves the whole block, while every query keeps
// the operation sequence of cpu_attention_rows.h's single-query loops, so the bits are the same.
#pragma once

#include <cstdint>

#include "cpu/kv_cache.h"

namespace zinf::cpu {

// Queries per block: four pairs, two queries per 512-bit register.
inline constexpr int kAttentionBlockQueries = 8;

// Query q < num_queries (≤ kAttentionBlockQueries) sees keys [0, first_num_keys + q · keys_step)
// of KV head kv_head: keys_step 1 for consecutive tokens of one head, 0 for heads of one token.
struct QueryBlock {
  const float* query = nullptr;  // query q's head_dim floats at query + q · query_stride
  int64_t query_stride = 0;
  int num_queries = 0;
  int first_num_keys = 0;
  int keys_step = 1;
  int kv_head = 0;
  int head_dim = 0;

  int num_keys(int q) const { return first_num_keys + q * keys_step; }
  int last_num_keys() const { return num_keys(num_queries - 1); }
};

// ScoreKeys for each query of the block, all over keys [0, last_num_keys()): query q's at scores
// + q · score_stride (past its own keys, values it ignores). Rows up to num_queries rounded up to
// 4 are written, up to last_num_keys() rounded up to 8 (keys are scored 4 or 8 at a time):
// score_stride must have room for that.
void ScoreKeysBlockAvx512(const QueryBlock& block, const KvRows& keys, float scale, float* scores,
                          int64_t score_stride);

// WeightValues for each query of the block over its own keys, query q's weights at weights + q ·
// weight_stride and its output at out + q · out_stride: the keys all of them see are accumulated
// together, then each query's further ones, in position order.
void WeightValuesBlockAvx512(const QueryBlock& block, const float* weights, int64_t weight_stride,
                             const KvRows& values, float* out, int64_t out_stride);

}  // namespace zinf::cpu
