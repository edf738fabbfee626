// ScoreKeysBlockAvx2 / WeightValuesBlockAvx2. Scores: one query per 256-bit register, dims 8c..8c+8
// times the same dims of a key, so each accumulator is ScoreKeys' 8-lane chain; a tile of 4
// queries × 2 keys (8 accumulators, reduced together in ReduceLanes' order). Values: each output
// element is its own fma chain, so any lane layout gives the same bits; 16 dims of 4 queries at a
// time, each value load serving the 4. Both tiles keep 8 accumulators in registers of AVX2's 16.
#include "cpu/attention_rows_avx2_blocks.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/kv_prefetch.h"
#include "cpu/reduce_avx2.h"

namespace zinf::cpu {

namespace {

constexpr int kGroup = 4;  // queries per tile
constexpr int kGroups = kAttentionBlockQueries / kGroup;
constexpr int kTileKeys = 2;     // keys per score tile
constexpr int kValueChunks = 2;  // 8-float value vectors per query in a value pass

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Dims [at, at + 8) of a key or value row, as stored (an int8 one before its scale), in f32.
template <KvElement kType>
inline __m256 LoadKv8(const KvRows& rows, int64_t at) {
  if constexpr (kType == KvElement::kI8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows.i8 + at));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
  } else if constexpr (kType == KvElement::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows.f16 + at)));
  } else {
    return _mm256_loadu_ps(rows.f32 + at);
  }
}

// One score tile: queries q[0..4) (a short block repeats its last) against keys key[0..2) (past
// the last key, the last again), whose heads start at `at` in KvRows.
struct ScoreTile {
  const float* q[kGroup];
  int key[kTileKeys];
  int64_t at[kTileKeys];
};

// acc[2b + e] = the 8-lane chain of query b with key e over the body of head_dim.
template <KvElement kType>
inline void ScoreTileBody(const ScoreTile& tile, int body, const KvRows& keys, __m256 (&acc)[8]) {
  // Hand-unrolled: at -O2 GCC keeps `acc` in memory otherwise.
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
  for (int d = 0; d < body; d += 8) {
    __m256 k[kTileKeys];
#pragma GCC unroll 2
    for (int e = 0; e < kTileKeys; ++e) k[e] = LoadKv8<kType>(keys, tile.at[e] + d);
#pragma GCC unroll 4
    for (int b = 0; b < kGroup; ++b) {
      const __m256 qv = _mm256_loadu_ps(tile.q[b] + d);
#pragma GCC unroll 2
      for (int e = 0; e < kTileKeys; ++e)
        acc[2 * b + e] = _mm256_fmadd_ps(qv, k[e], acc[2 * b + e]);
    }
  }
}

// Stores the tile's scores (rows of its 4 queries at scores + b · score_stride, 2 keys each) from
// the reduced sums: the tail of head_dim past the 8-float chunks one fma at a time, then · row
// scale · scale, as ScoreKeys does.
template <KvElement kType>
inline void StoreTileScores(__m256 sums, const ScoreTile& tile, const KvRows& keys, int kv_head,
                            int body, int head_dim, float scale, float* scores,
                            int64_t score_stride) {
  if (body == head_dim) {
    if constexpr (kType == KvElement::kI8) {
      const float s0 = keys.scales[static_cast<int64_t>(tile.key[0]) * keys.num_kv_heads + kv_head];
      const float s1 = keys.scales[static_cast<int64_t>(tile.key[1]) * keys.num_kv_heads + kv_head];
      sums = _mm256_mul_ps(sums, _mm256_setr_ps(s0, s1, s0, s1, s0, s1, s0, s1));
    }  // an f32 row's scale is 1: sum · 1 is sum
    sums = _mm256_mul_ps(sums, _mm256_set1_ps(scale));
    const __m128 low = _mm256_castps256_ps128(sums), high = _mm256_extractf128_ps(sums, 1);
    _mm_storel_pi(reinterpret_cast<__m64*>(scores), low);
    _mm_storeh_pi(reinterpret_cast<__m64*>(scores + score_stride), low);
    _mm_storel_pi(reinterpret_cast<__m64*>(scores + 2 * score_stride), high);
    _mm_storeh_pi(reinterpret_cast<__m64*>(scores + 3 * score_stride), high);
    return;
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sums);
  for (int b = 0; b < kGroup; ++b) {
    for (int e = 0; e < kTileKeys; ++e) {
      float sum = lanes[2 * b + e];
      for (int d = body; d < head_dim; ++d)
        sum = std::fma(tile.q[b][d], keys.value(tile.at[e] + d), sum);
      scores[b * score_stride + e] = sum * keys.scale(tile.key[e], kv_head) * scale;
    }
  }
}

template <KvElement kType>
void ScoreBlock(const QueryBlock& block, const KvRows& keys, float scale, float* scores,
                int64_t score_stride) {
  const int head_dim = block.head_dim, body = head_dim / 8 * 8, kv_head = block.kv_head;
  const int last_key = block.last_num_keys() - 1;
  const int groups = (block.num_queries + kGroup - 1) / kGroup;
  ScoreTile tiles[kGroups];
  for (int g = 0; g < groups; ++g) {
    for (int b = 0; b < kGroup; ++b) {
      const int q = std::min(kGroup * g + b, block.num_queries - 1);
      tiles[g].q[b] = block.query + q * block.query_stride;
    }
  }
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  const int64_t head_bytes = head_dim * KvElementBytes(keys);
  for (int j = 0; j <= last_key; j += kTileKeys) {
    int key[kTileKeys];
    int64_t at[kTileKeys];
    for (int e = 0; e < kTileKeys; ++e) {
      key[e] = std::min(j + e, last_key);
      at[e] = key[e] * keys.row_stride + head_offset;
      PrefetchKv(keys, at[e] + KvAheadDistance(keys, key[e], last_key + 1), head_bytes);
    }
    // Both groups of queries over the same keys, the second finding them in L1.
    for (int g = 0; g < groups; ++g) {
      ScoreTile& tile = tiles[g];
      for (int e = 0; e < kTileKeys; ++e) {
        tile.key[e] = key[e];
        tile.at[e] = at[e];
      }
      __m256 acc[8];
      ScoreTileBody<kType>(tile, body, keys, acc);
      StoreTileScores<kType>(ReduceEight(acc), tile, keys, kv_head, body, head_dim, scale,
                             scores + kGroup * g * score_stride + j, score_stride);
    }
  }
}

// Accumulates value row j (kChunks · 8 dims from `at`) into a group's queries: all of them, or
// (kAll false) those whose keys reach past j; requests the same dims `ahead` elements on. w[b][j]
// is already the weight times the row's scale.
template <KvElement kType, bool kAll, int kChunks>
inline void AddValueRow(const float* const (&w)[kGroup], const int (&num_keys)[kGroup],
                        const KvRows& values, int j, int64_t at, int64_t ahead,
                        __m256 (&acc)[kGroup][kValueChunks]) {
  PrefetchKv(values, at + ahead, 8 * kChunks * KvElementBytes(values));
  __m256 v[kChunks];
#pragma GCC unroll 2
  for (int c = 0; c < kChunks; ++c) v[c] = LoadKv8<kType>(values, at + 8 * c);
#pragma GCC unroll 4
  for (int b = 0; b < kGroup; ++b) {
    if (!kAll && j >= num_keys[b]) continue;
    const __m256 wv = _mm256_set1_ps(w[b][j]);
#pragma GCC unroll 2
    for (int c = 0; c < kChunks; ++c) acc[b][c] = _mm256_fmadd_ps(wv, v[c], acc[b][c]);
  }
}

// One pass of kChunks · 8 dims from d0 for a group of 4 queries (a short group repeats its last
// query, whose copies are not stored): the keys all of them see, then the further ones of the
// later queries, so that each query's chain runs over its own keys in order (a zero weight would
// not leave it alone: fma(0, v, -0) is +0, and 0 · inf is NaN).
template <KvElement kType, int kChunks>
inline void WeightPass(const float* const (&w)[kGroup], const int (&num_keys)[kGroup], int stored,
                       const KvRows& values, int64_t head_offset, int d0,
                       float* const (&out)[kGroup]) {
  __m256 acc[kGroup][kValueChunks];
#pragma GCC unroll 4
  for (int b = 0; b < kGroup; ++b)
#pragma GCC unroll 2
    for (int c = 0; c < kValueChunks; ++c) acc[b][c] = _mm256_setzero_ps();
  const int last = num_keys[kGroup - 1];
  int j = 0;
  for (; j < num_keys[0]; ++j) {
    AddValueRow<kType, true, kChunks>(w, num_keys, values, j,
                                      j * values.row_stride + head_offset + d0,
                                      KvAheadDistance(values, j, last), acc);
  }
  for (; j < last; ++j) {
    AddValueRow<kType, false, kChunks>(w, num_keys, values, j,
                                       j * values.row_stride + head_offset + d0,
                                       KvAheadDistance(values, j, last), acc);
  }
  // Unrolled with a constant bound: indexing acc by a run-time query would keep it in memory.
#pragma GCC unroll 4
  for (int b = 0; b < kGroup; ++b) {
    if (b >= stored) break;
#pragma GCC unroll 2
    for (int c = 0; c < kChunks; ++c) _mm256_storeu_ps(out[b] + d0 + 8 * c, acc[b][c]);
  }
}

template <KvElement kType>
void WeightBlock(const QueryBlock& block, const float* weights, int64_t weight_stride,
                 const KvRows& values, float* out, int64_t out_stride) {
  const int kv_head = block.kv_head, head_dim = block.head_dim, body = head_dim / 8 * 8;
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  // An int8 cache's weights times their rows' scales, formed once rather than in every pass (the
  // product WeightValues forms; for an f32 cache weights[j] · 1 is weights[j]).
  thread_local std::vector<float> scaled;
  if constexpr (kType == KvElement::kI8) {
    const int64_t n = block.last_num_keys();
    if (scaled.size() < static_cast<size_t>(block.num_queries * n))
      scaled.resize(block.num_queries * n);
    for (int q = 0; q < block.num_queries; ++q) {
      const float* src = weights + q * weight_stride;
      float* dst = scaled.data() + q * n;
      for (int j = 0; j < block.num_keys(q); ++j) dst[j] = src[j] * values.scale(j, kv_head);
    }
    weights = scaled.data();
    weight_stride = n;
  }
  const float* w[kGroups][kGroup];
  int num_keys[kGroups][kGroup];
  float* o[kGroups][kGroup];
  int stored[kGroups];
  const int groups = (block.num_queries + kGroup - 1) / kGroup;
  for (int g = 0; g < groups; ++g) {
    for (int b = 0; b < kGroup; ++b) {
      const int q = std::min(kGroup * g + b, block.num_queries - 1);
      w[g][b] = weights + q * weight_stride;
      num_keys[g][b] = block.num_keys(q);
      o[g][b] = out + q * out_stride;
    }
    stored[g] = std::min(kGroup, block.num_queries - kGroup * g);
  }
  // Each pass of dims for every group before the next, the later groups finding the values in
  // cache.
  int d0 = 0;
  for (; d0 + 8 * kValueChunks <= body; d0 += 8 * kValueChunks) {
    for (int g = 0; g < groups; ++g)
      WeightPass<kType, kValueChunks>(w[g], num_keys[g], stored[g], values, head_offset, d0, o[g]);
  }
  if (d0 < body) {
    for (int g = 0; g < groups; ++g)
      WeightPass<kType, 1>(w[g], num_keys[g], stored[g], values, head_offset, d0, o[g]);
  }
  for (int g = 0; g < groups; ++g) {
    for (int b = 0; b < stored[g]; ++b) {
      for (int d = body; d < head_dim; ++d) {
        float sum = 0;
        for (int j = 0; j < num_keys[g][b]; ++j)
          sum = std::fma(w[g][b][j], values.value(j * values.row_stride + head_offset + d), sum);
        o[g][b][d] = sum;
      }
    }
  }
}

#pragma GCC pop_options

}  // namespace

void ScoreKeysBlockAvx2(const QueryBlock& block, const KvRows& keys, float scale, float* scores,
                        int64_t score_stride) {
  switch (keys.element()) {
    case KvElement::kF32:
      return ScoreBlock<KvElement::kF32>(block, keys, scale, scores, score_stride);
    case KvElement::kF16:
      return ScoreBlock<KvElement::kF16>(block, keys, scale, scores, score_stride);
    case KvElement::kI8:
      return ScoreBlock<KvElement::kI8>(block, keys, scale, scores, score_stride);
  }
}

void WeightValuesBlockAvx2(const QueryBlock& block, const float* weights, int64_t weight_stride,
                           const KvRows& values, float* out, int64_t out_stride) {
  switch (values.element()) {
    case KvElement::kF32:
      return WeightBlock<KvElement::kF32>(block, weights, weight_stride, values, out, out_stride);
    case KvElement::kF16:
      return WeightBlock<KvElement::kF16>(block, weights, weight_stride, values, out, out_stride);
    case KvElement::kI8:
      return WeightBlock<KvElement::kI8>(block, weights, weight_stride, values, out, out_stride);
  }
}

}  // namespace zinf::cpu
