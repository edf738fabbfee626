// The inner loops of CPU attention for one query, over one KV head's keys and values: query·key
// scores, their softmax and the score-weighted sum of values. Portable and vector versions with
// the same arithmetic, so results do not depend on the CPU's instruction set or the batch.
#pragma once

#include "cpu/isa.h"
#include "cpu/kv_cache.h"

namespace zinf::cpu {

// scores[j] = dot(query, key_j) · scale for keys [0, num_keys) of KV head `kv_head`: the dot in 8
// lanes (lane i takes dimensions ≡ i mod 8, one fma each, in order), reduced in ReduceLanes'
// order, the tail of head_dim beyond a multiple of 8 added one fma at a time; an int8 key's dot
// is then multiplied by its scale.
void ScoreKeys(const float* query, const KvRows& keys, int kv_head, int head_dim, int num_keys,
               float scale, float* scores, CpuIsa isa);

// scores[j] = exp(scores[j] - max_j scores[j]) with cpu_exp.h's Exp; returns their sum in double,
// accumulated in 8 lanes (lane i takes j ≡ i mod 8 below the last multiple of 8) reduced in
// ReduceLanes' order, the rest added in order.
double ExpScoresAndSum(float* scores, int num_keys, CpuIsa isa);

// The softmax weights: ExpScoresAndSum, then each score times float(1 / sum), a score below
// float(2 · FLT_MIN · sum) taken as 0 first (its weight would be subnormal or nearly so).
void Softmax(float* scores, int num_keys, CpuIsa isa);

// out[d] = Σ_j weights[j] · value_j[d], accumulated as out[d] = fma(w, value, out[d]) over j in
// order from zero, with w = weights[j] (times the row's scale for an int8 cache).
void WeightValues(const float* weights, const KvRows& values, int kv_head, int head_dim,
                  int num_keys, float* out, CpuIsa isa);

// ScoreKeys, Softmax and WeightValues (isa ≥ kAvx2) for one query of each of heads [first_head,
// first_head + num_heads), whose KV heads are the same heads (no grouping); queries and outputs
// head_dim apart, scores[num_heads · num_keys]. Each head gets the same bits as the three calls,
// but each KV row is read once for all the heads, in order: a decode step's rows come from DRAM,
// and one walk per head, 256 bytes of every row at a time, read them half as fast (Zen 4, one
// thread, 12 heads of 64, 33 / 128 keys flushed from the caches: 17.5 / 59.5 µs head by head,
// 9.5 / 32 µs in row order).
void AttendHeadsInRowOrder(const float* query, const KvRows& keys, const KvRows& values,
                           int first_head, int num_heads, int head_dim, int num_keys, float scale,
                           float* scores, float* out, CpuIsa isa);

}  // namespace zinf::cpu
