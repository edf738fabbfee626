// ScoreKeysBlockAvx512 / WeightValuesBlockAvx512. Scores: two queries per 512-bit register,
// [q_a dims 8c..8c+8 | q_b dims 8c..8c+8], times key dims 8c..8c+8 broadcast to both halves, so
// each half is ScoreKeys' 8-lane chain; a tile of 4 keys × 4 query pairs. Values: each output
// element is its own fma chain, so any lane layout gives the same bits; 32 dims of all 8 queries
// at a time, each value load serving the 8.
#include "cpu/attention_rows_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/kv_prefetch.h"

namespace zinf::cpu {

namespace {

// A block's queries are scored in pairs, a tile of kTileKeys keys × kPairs pairs at a time (16
// registers): 4 × 4 for blocks of 5 to 8 queries, and for blocks of up to 4 (grouped-query
// attention with 4 heads to a KV head: Llama 3, Mistral) 8 keys × 2 pairs, rather than 4 pairs of
// which 2 hold zeros.
template <int kPairs>
constexpr int kTileKeys = 16 / kPairs;
// 16-dim vectors per query in a value pass: kQueries × kVectors accumulators. 8 queries × 2 for
// blocks of 5 to 8 (each value row loaded serves 8 queries; 4 × 4 measured 1.25x slower there),
// 4 × 4 for blocks of up to 4.

// KvRows::scale with the cache's dtype known when compiling.
template <KvElement kType>
inline float RowScaleOf(const KvRows& rows, int j, int kv_head) {
  if constexpr (kType == KvElement::kI8) return rows.scale(j, kv_head);
  return 1.0f;
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized (or -Wuninitialized) reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// kPairs query pairs, chunk-interleaved: pair p's chunk c is 16 floats at (p · chunks + c) · 16.
// Missing queries are zeros. Grown only.
template <int kPairs>
const float* PackQueryPairs(const QueryBlock& block, int chunks) {
  thread_local std::vector<float> packed;
  const auto size = static_cast<size_t>(kPairs * chunks * 16);
  if (packed.size() < size) packed.resize(size);
  for (int q = 0; q < 2 * kPairs; ++q) {
    const float* src = block.query + q * block.query_stride;
    float* dst = packed.data() + (q / 2 * chunks) * 16 + (q % 2) * 8;
    for (int c = 0; c < chunks; ++c) {
      const __m256 v = q < block.num_queries ? _mm256_loadu_ps(src + 8 * c) : _mm256_setzero_ps();
      _mm256_storeu_ps(dst + 16 * c, v);
    }
  }
  return packed.data();
}

// Key dims [at, at + 8) as f32 in both 256-bit halves.
template <KvElement kType>
inline __m512 BroadcastKey8(const KvRows& keys, int64_t at) {
  if constexpr (kType == KvElement::kI8) {
    int64_t bytes;
    std::memcpy(&bytes, keys.i8 + at, sizeof(bytes));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_set1_epi64x(bytes)));
  } else if constexpr (kType == KvElement::kF16) {
    return _mm512_broadcast_f32x8(
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(keys.f16 + at))));
  } else {
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(keys.f32 + at));
  }
}

// The keys of one score tile: past the last key it repeats that one, whose scores land in the
// rows' padding.
template <int kKeys>
struct KeyTile {
  int key[kKeys];
  int64_t at[kKeys];  // where each key's head starts in KvRows
};

template <int kKeys>
KeyTile<kKeys> MakeKeyTile(const QueryBlock& block, const KvRows& keys, int first_key) {
  KeyTile<kKeys> tile;
  for (int e = 0; e < kKeys; ++e) {
    tile.key[e] = std::min(first_key + e, block.last_num_keys() - 1);
    tile.at[e] =
        tile.key[e] * keys.row_stride + static_cast<int64_t>(block.kv_head) * block.head_dim;
  }
  return tile;
}

// The body of the dot products of a tile's keys with the block's query pairs.
template <KvElement kType, int kPairs>
inline void ScoreTile(const float* packed, int chunks, const KvRows& keys,
                      const KeyTile<kTileKeys<kPairs>>& tile,
                      __m512 (&acc)[kTileKeys<kPairs>][kPairs]) {
  constexpr int kKeys = kTileKeys<kPairs>;
  // Hand-unrolled: at -O2 GCC keeps `acc` in memory otherwise.
#pragma GCC unroll 8
  for (int e = 0; e < kKeys; ++e)
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) acc[e][p] = _mm512_setzero_ps();
  for (int c = 0; c < chunks; ++c) {
    __m512 k[kKeys];
#pragma GCC unroll 8
    for (int e = 0; e < kKeys; ++e) k[e] = BroadcastKey8<kType>(keys, tile.at[e] + 8 * c);
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) {
      const __m512 qv = _mm512_loadu_ps(packed + (p * chunks + c) * 16);
#pragma GCC unroll 8
      for (int e = 0; e < kKeys; ++e) acc[e][p] = _mm512_fmadd_ps(qv, k[e], acc[e][p]);
    }
  }
}

// ReduceLanes of 16 chains at once, the same three levels of additions, each add serving several
// sums. l_i + l_i+4 of the four 8-lane halves of a and b, one per 128 bits.
inline __m512 SumHalves(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Per 128 bits: s04 + s26, s15 + s37 of low's, then of high's.
inline __m512 SumQuarters(__m512 low, __m512 high) {
  return _mm512_add_ps(_mm512_shuffle_ps(low, high, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(low, high, _MM_SHUFFLE(3, 2, 3, 2)));
}

// The sums of pairs 2g and 2g + 1 (queries 4g .. 4g + 3) with the tile's keys k .. k + 3:
// 128-bit lane b holds query 4g + b's scores for those keys in order.
template <int kKeys, int kPairs>
inline __m512 ReduceQueryQuad(const __m512 (&acc)[kKeys][kPairs], int g, int k) {
  const int p = 2 * g;
  const __m512 keys01 =
      SumQuarters(SumHalves(acc[k][p], acc[k][p + 1]), SumHalves(acc[k + 1][p], acc[k + 1][p + 1]));
  const __m512 keys23 = SumQuarters(SumHalves(acc[k + 2][p], acc[k + 2][p + 1]),
                                    SumHalves(acc[k + 3][p], acc[k + 3][p + 1]));
  return _mm512_add_ps(_mm512_shuffle_ps(keys01, keys23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(keys01, keys23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// The scores of 4 keys (`key`, starting at `at`) for queries [first, first + 4) from their reduced sums:
// · row scale · scale, as ScoreKeys does, after the tail of head_dim past the 8-float chunks one
// fma at a time.
template <KvElement kType>
inline void StoreQuadScores(__m512 sums, const QueryBlock& block, int first, const KvRows& keys,
                            const int* key, const int64_t* at, float scale, float* scores,
                            int64_t score_stride) {
  const int body = block.head_dim / 8 * 8;
  if (body == block.head_dim) {
    if constexpr (kType == KvElement::kI8) {
      const int h = block.kv_head;
      const __m128 row_scales =
          _mm_setr_ps(RowScaleOf<kType>(keys, key[0], h), RowScaleOf<kType>(keys, key[1], h),
                      RowScaleOf<kType>(keys, key[2], h), RowScaleOf<kType>(keys, key[3], h));
      sums = _mm512_mul_ps(sums, _mm512_broadcast_f32x4(row_scales));
    }  // an f32 row's scale is 1: sum · 1 is sum
    sums = _mm512_mul_ps(sums, _mm512_set1_ps(scale));
    _mm_storeu_ps(scores, _mm512_extractf32x4_ps(sums, 0));
    _mm_storeu_ps(scores + score_stride, _mm512_extractf32x4_ps(sums, 1));
    _mm_storeu_ps(scores + 2 * score_stride, _mm512_extractf32x4_ps(sums, 2));
    _mm_storeu_ps(scores + 3 * score_stride, _mm512_extractf32x4_ps(sums, 3));
    return;
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sums);
  for (int b = 0; b < std::min(4, block.num_queries - first); ++b) {
    const float* q = block.query + (first + b) * block.query_stride;
    for (int e = 0; e < 4; ++e) {
      float sum = lanes[4 * b + e];
      for (int d = body; d < block.head_dim; ++d) sum = std::fma(q[d], keys.value(at[e] + d), sum);
      scores[b * score_stride + e] = sum * RowScaleOf<kType>(keys, key[e], block.kv_head) * scale;
    }
  }
}

template <KvElement kType, int kPairs>
void ScoreBlock(const QueryBlock& block, const KvRows& keys, float scale, float* scores,
                int64_t score_stride) {
  constexpr int kKeys = kTileKeys<kPairs>;
  const int chunks = block.head_dim / 8;
  const float* packed = PackQueryPairs<kPairs>(block, chunks);
  const int64_t head_bytes = block.head_dim * KvElementBytes(keys);
  for (int j = 0; j < block.last_num_keys(); j += kKeys) {
    const KeyTile<kKeys> tile = MakeKeyTile<kKeys>(block, keys, j);
    for (int e = 0; e < kKeys; ++e) {
      PrefetchKv(keys, tile.at[e] + KvAheadDistance(keys, tile.key[e], block.last_num_keys()),
                 head_bytes);
    }
    __m512 acc[kKeys][kPairs];
    ScoreTile<kType, kPairs>(packed, chunks, keys, tile, acc);
    // Unrolled with constant bounds: a run-time quad index would keep acc in memory.
#pragma GCC unroll 2
    for (int g = 0; g < kPairs / 2; ++g) {
      if (4 * g >= block.num_queries) break;
#pragma GCC unroll 2
      for (int k = 0; k < kKeys; k += 4) {
        StoreQuadScores<kType>(ReduceQueryQuad(acc, g, k), block, 4 * g, keys, tile.key + k,
                               tile.at + k, scale, scores + 4 * g * score_stride + j + k,
                               score_stride);
      }
    }
  }
}

// Value dims [at, at + 16) where `mask` says, as f32 (zeros elsewhere).
template <KvElement kType>
inline __m512 LoadValues16(const KvRows& values, int64_t at, __mmask16 mask) {
  if constexpr (kType == KvElement::kI8) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, values.i8 + at)));
  } else if constexpr (kType == KvElement::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, values.f16 + at));
  } else {
    return _mm512_maskz_loadu_ps(mask, values.f32 + at);
  }
}

// Accumulates value row j (dims from `at`) into the block's queries: all of them, or (kAll false)
// those whose keys reach past j; requests the same dims `ahead` elements on.
template <KvElement kType, bool kAll, int kQueries, int kValueVectors>
inline void AddValueRow(const float* const (&weights)[kQueries], const int (&num_keys)[kQueries],
                        const KvRows& values, int kv_head, int j, int64_t at, int64_t ahead,
                        int dims, const __mmask16 (&masks)[kValueVectors],
                        __m512 (&acc)[kQueries][kValueVectors]) {
  PrefetchKv(values, at + ahead, dims * KvElementBytes(values));
  __m512 v[kValueVectors];
#pragma GCC unroll 8
  for (int c = 0; c < kValueVectors; ++c) v[c] = LoadValues16<kType>(values, at + 16 * c, masks[c]);
#pragma GCC unroll 8
  for (int q = 0; q < kQueries; ++q) {
    if (!kAll && j >= num_keys[q]) continue;
    // The product WeightValues forms (for an f32 cache weights[j] · 1, which is weights[j]).
    const float w = kType == KvElement::kI8 ? weights[q][j] * RowScaleOf<kType>(values, j, kv_head)
                                            : weights[q][j];
    const __m512 wv = _mm512_set1_ps(w);
#pragma GCC unroll 8
    for (int c = 0; c < kValueVectors; ++c) acc[q][c] = _mm512_fmadd_ps(wv, v[c], acc[q][c]);
  }
}

template <KvElement kType, int kQueries, int kValueVectors>
void WeightBlock(const QueryBlock& block, const float* weights, int64_t weight_stride,
                 const KvRows& values, float* out, int64_t out_stride) {
  // A short block repeats its last query, whose copies are not stored.
  const float* w[kQueries];
  int num_keys[kQueries];
  for (int q = 0; q < kQueries; ++q) {
    const int query = std::min(q, block.num_queries - 1);
    w[q] = weights + query * weight_stride;
    num_keys[q] = block.num_keys(query);
  }
  const int kv_head = block.kv_head, head_dim = block.head_dim;
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  const int last = num_keys[kQueries - 1];
  for (int d0 = 0; d0 < head_dim; d0 += 16 * kValueVectors) {
    __mmask16 masks[kValueVectors];
    for (int c = 0; c < kValueVectors; ++c) {
      const int left = std::clamp(head_dim - d0 - 16 * c, 0, 16);
      masks[c] = static_cast<__mmask16>((1u << left) - 1);
    }
    const int dims = std::min(16 * kValueVectors, head_dim - d0);  // this pass's
    __m512 acc[kQueries][kValueVectors];
#pragma GCC unroll 8
    for (int q = 0; q < kQueries; ++q)
#pragma GCC unroll 8
      for (int c = 0; c < kValueVectors; ++c) acc[q][c] = _mm512_setzero_ps();
    // The keys every query sees, then the further ones of the later queries, so that each query's
    // chain runs over its own keys in order (a zero weight would not leave it alone: fma(0, v, -0)
    // is +0, and 0 · inf is NaN).
    int j = 0;
    for (; j < num_keys[0]; ++j) {
      AddValueRow<kType, true, kQueries, kValueVectors>(
          w, num_keys, values, kv_head, j, j * values.row_stride + head_offset + d0,
          KvAheadDistance(values, j, last), dims, masks, acc);
    }
    for (; j < last; ++j) {
      AddValueRow<kType, false, kQueries, kValueVectors>(
          w, num_keys, values, kv_head, j, j * values.row_stride + head_offset + d0,
          KvAheadDistance(values, j, last), dims, masks, acc);
    }
    // Unrolled with a constant bound: indexing acc by a run-time query would keep it in memory.
#pragma GCC unroll 8
    for (int q = 0; q < kQueries; ++q) {
      if (q >= block.num_queries) break;
      float* o = out + q * out_stride + d0;
#pragma GCC unroll 8
      for (int c = 0; c < kValueVectors; ++c)
        _mm512_mask_storeu_ps(o + 16 * c, masks[c], acc[q][c]);
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

// Each kernel instantiated for each of the cache's element types.
template <int kPairs>
void ScoreBlockOf(const QueryBlock& block, const KvRows& keys, float scale, float* scores,
                  int64_t score_stride) {
  switch (keys.element()) {
    case KvElement::kF32:
      return ScoreBlock<KvElement::kF32, kPairs>(block, keys, scale, scores, score_stride);
    case KvElement::kF16:
      return ScoreBlock<KvElement::kF16, kPairs>(block, keys, scale, scores, score_stride);
    case KvElement::kI8:
      return ScoreBlock<KvElement::kI8, kPairs>(block, keys, scale, scores, score_stride);
  }
}

template <int kQueries, int kValueVectors>
void WeightBlockOf(const QueryBlock& block, const float* weights, int64_t weight_stride,
                   const KvRows& values, float* out, int64_t out_stride) {
  switch (values.element()) {
    case KvElement::kF32:
      return WeightBlock<KvElement::kF32, kQueries, kValueVectors>(block, weights, weight_stride,
                                                                   values, out, out_stride);
    case KvElement::kF16:
      return WeightBlock<KvElement::kF16, kQueries, kValueVectors>(block, weights, weight_stride,
                                                                   values, out, out_stride);
    case KvElement::kI8:
      return WeightBlock<KvElement::kI8, kQueries, kValueVectors>(block, weights, weight_stride,
                                                                  values, out, out_stride);
  }
}

}  // namespace

void ScoreKeysBlockAvx512(const QueryBlock& block, const KvRows& keys, float scale, float* scores,
                          int64_t score_stride) {
  if (block.num_queries <= 4) return ScoreBlockOf<2>(block, keys, scale, scores, score_stride);
  ScoreBlockOf<4>(block, keys, scale, scores, score_stride);
}

void WeightValuesBlockAvx512(const QueryBlock& block, const float* weights, int64_t weight_stride,
                             const KvRows& values, float* out, int64_t out_stride) {
  if (block.num_queries <= 4)
    return WeightBlockOf<4, 4>(block, weights, weight_stride, values, out, out_stride);
  WeightBlockOf<8, 2>(block, weights, weight_stride, values, out, out_stride);
}

}  // namespace zinf::cpu
