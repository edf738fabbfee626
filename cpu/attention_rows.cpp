// ScoreKeys / ExpScoresAndSum / Softmax / WeightValues: portable and AVX2 versions (AVX-512 for
// the exps) of the same operation sequence.
#include "cpu/attention_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/dot.h"
#include "cpu/exp.h"
#include "cpu/kv_prefetch.h"
#include "cpu/reduce_avx2.h"

namespace zinf::cpu {

namespace {

float MaxScorePortable(const float* scores, int num_keys) {
  float max_score = scores[0];
  for (int j = 1; j < num_keys; ++j) max_score = std::max(max_score, scores[j]);
  return max_score;
}

float ScoreOnePortable(const float* query, const KvRows& keys, int64_t at, int head_dim) {
  const int body = head_dim / 8 * 8;
  float lanes[8] = {};
  for (int d = 0; d < body; d += 8) {
    for (int i = 0; i < 8; ++i) lanes[i] = std::fma(query[d + i], keys.value(at + d + i), lanes[i]);
  }
  float sum = ReduceLanes(lanes);
  for (int d = body; d < head_dim; ++d) sum = std::fma(query[d], keys.value(at + d), sum);
  return sum;
}

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

inline __m256 LoadKv8(const KvRows& rows, int64_t at) {
  if (rows.f32 != nullptr) return _mm256_loadu_ps(rows.f32 + at);
  if (rows.f16 != nullptr)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows.f16 + at)));
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows.i8 + at));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
}

inline float FinishScore(__m256 acc, const float* query, const KvRows& keys, int64_t at, int body,
                         int head_dim) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = ReduceLanes(lanes);
  for (int d = body; d < head_dim; ++d) sum = std::fma(query[d], keys.value(at + d), sum);
  return sum;
}

// scores[i] for keys j .. j + 7 of KV head kv_head: eight independent fma chains, reduced
// together, the tail of head_dim and the scales after.
inline __attribute__((always_inline)) void ScoreEightKeysAvx2(const float* query,
                                                              const KvRows& keys, int kv_head,
                                                              int head_dim, int j, float scale,
                                                              float* scores) {
  const int body = head_dim / 8 * 8;
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  __m256 acc[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
  for (int d = 0; d < body; d += 8) {
    const __m256 q = _mm256_loadu_ps(query + d);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      acc[i] =
          _mm256_fmadd_ps(q, LoadKv8(keys, (j + i) * keys.row_stride + head_offset + d), acc[i]);
    }
  }
  alignas(32) float sums[8];
  _mm256_store_ps(sums, ReduceEight(acc));
  for (int i = 0; i < 8; ++i) {
    float sum = sums[i];
    const int64_t at = (j + i) * keys.row_stride + head_offset;
    for (int d = body; d < head_dim; ++d) sum = std::fma(query[d], keys.value(at + d), sum);
    scores[i] = sum * keys.scale(j + i, kv_head) * scale;
  }
}

// The score of key j alone (past the last multiple of 8).
inline float ScoreOneKeyAvx2(const float* query, const KvRows& keys, int kv_head, int head_dim,
                             int j, float scale) {
  const int body = head_dim / 8 * 8;
  const int64_t at = j * keys.row_stride + static_cast<int64_t>(kv_head) * head_dim;
  __m256 acc = _mm256_setzero_ps();
  for (int d = 0; d < body; d += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(query + d), LoadKv8(keys, at + d), acc);
  return FinishScore(acc, query, keys, at, body, head_dim) * keys.scale(j, kv_head) * scale;
}

// Σ_j weights[j] · value_j[d] for one dimension d of KV head kv_head, one fma at a time in order:
// the dimensions past the last multiple of 8.
inline float WeightValueTail(const float* weights, const KvRows& values, int kv_head, int head_dim,
                             int num_keys, int d) {
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  float sum = 0;
  for (int j = 0; j < num_keys; ++j) {
    sum = std::fma(weights[j] * values.scale(j, kv_head),
                   values.value(j * values.row_stride + head_offset + d), sum);
  }
  return sum;
}

// Eight keys at a time: eight independent fma chains, reduced together.
void ScoreKeysAvx2(const float* query, const KvRows& keys, int kv_head, int head_dim, int num_keys,
                   float scale, float* scores) {
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  const int64_t head_bytes = head_dim * KvElementBytes(keys);
  int j = 0;
  for (; j + 8 <= num_keys; j += 8) {
    for (int i = 0; i < 8; ++i) {
      PrefetchKv(keys,
                 (j + i) * keys.row_stride + head_offset + KvAheadDistance(keys, j + i, num_keys),
                 head_bytes);
    }
    ScoreEightKeysAvx2(query, keys, kv_head, head_dim, j, scale, scores + j);
  }
  for (; j < num_keys; ++j) scores[j] = ScoreOneKeyAvx2(query, keys, kv_head, head_dim, j, scale);
}

// What std::max over j in order gives: scores[0] if it is NaN, else the largest non-NaN score.
// The lanes may pick another of several equal scores, which differs only for zeros (-0 == +0):
// a zero maximum is taken from the scalar loop instead.
float MaxScoreAvx2(const float* scores, int num_keys) {
  const float first = scores[0];
  if (std::isnan(first)) return first;
  __m256 low = _mm256_set1_ps(first), high = low;
  int j = 0;
  // _mm256_max_ps(x, m) is m where x is NaN.
  for (; j + 16 <= num_keys; j += 16) {
    low = _mm256_max_ps(_mm256_loadu_ps(scores + j), low);
    high = _mm256_max_ps(_mm256_loadu_ps(scores + j + 8), high);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(low, high));
  float max_score = first;
  for (float lane : lanes) max_score = std::max(max_score, lane);
  for (; j < num_keys; ++j) max_score = std::max(max_score, scores[j]);
  return max_score != 0.0f ? max_score : MaxScorePortable(scores, num_keys);
}

// The lanes [0, count) of 8, as a mask for _mm256_maskload_ps / _mm256_maskstore_ps.
inline __m256i FirstLanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// scores[j] = Exp(scores[j] - max) in 8-float steps, the last one partial; the sums of the full
// steps in 8 double lanes.
void ExpScoresAvx2(float* scores, int num_keys, float max_score, double lanes[8]) {
  const __m256 max = _mm256_set1_ps(max_score);
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
  int j = 0;
  for (; j + 8 <= num_keys; j += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), max));
    _mm256_storeu_ps(scores + j, e);
    low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  _mm256_storeu_pd(lanes, low);
  _mm256_storeu_pd(lanes + 4, high);
  if (j < num_keys) {
    const __m256i mask = FirstLanes(num_keys - j);
    const __m256 x = _mm256_sub_ps(_mm256_maskload_ps(scores + j, mask), max);
    _mm256_maskstore_ps(scores + j, mask, Exp8(x));
  }
}

// Softmax's last step: each exponential below `keep` becomes 0, then all times `factor` (a NaN
// compares below nothing, so it stays).
__m256 KeptTimes(__m256 e, __m256 keep, __m256 factor) {
  return _mm256_mul_ps(_mm256_and_ps(e, _mm256_cmp_ps(e, keep, _CMP_NLT_UQ)), factor);
}

void ScaleScoresAvx2(float* scores, int num_keys, float keep, float factor) {
  const __m256 k = _mm256_set1_ps(keep), f = _mm256_set1_ps(factor);
  int j = 0;
  for (; j + 8 <= num_keys; j += 8) {
    _mm256_storeu_ps(scores + j, KeptTimes(_mm256_loadu_ps(scores + j), k, f));
  }
  if (j < num_keys) {
    const __m256i mask = FirstLanes(num_keys - j);
    _mm256_maskstore_ps(scores + j, mask, KeptTimes(_mm256_maskload_ps(scores + j, mask), k, f));
  }
}

// Up to 64 dimensions at a time held in registers while every value row passes.
void WeightValuesAvx2(const float* weights, const KvRows& values, int kv_head, int head_dim,
                      int num_keys, float* out) {
  const int body = head_dim / 8 * 8;
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  for (int d0 = 0; d0 < body; d0 += 64) {
    const int chunks = std::min(8, (body - d0) / 8);
    __m256 acc[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) acc[c] = _mm256_setzero_ps();
    for (int j = 0; j < num_keys; ++j) {
      const __m256 w = _mm256_set1_ps(weights[j] * values.scale(j, kv_head));
      const int64_t at = j * values.row_stride + head_offset + d0;
      PrefetchKv(values, at + KvAheadDistance(values, j, num_keys),
                 8 * chunks * KvElementBytes(values));
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        if (c < chunks) acc[c] = _mm256_fmadd_ps(w, LoadKv8(values, at + 8 * c), acc[c]);
      }
    }
    for (int c = 0; c < chunks; ++c) _mm256_storeu_ps(out + d0 + 8 * c, acc[c]);
  }
  for (int d = body; d < head_dim; ++d)
    out[d] = WeightValueTail(weights, values, kv_head, head_dim, num_keys, d);
}

// ScoreKeysAvx2 for heads [first_head, first_head + num_heads) at once (KV head = head), each
// block of 8 keys for every head before the next block, so that the rows are read in order;
// scores[h · num_keys + j]. Per score the same operations as ScoreKeysAvx2.
void ScoreKeysHeadsAvx2(const float* query, const KvRows& keys, int first_head, int num_heads,
                        int head_dim, int num_keys, float scale, float* scores) {
  int j = 0;
  for (; j + 8 <= num_keys; j += 8) {
    for (int h = 0; h < num_heads; ++h) {
      ScoreEightKeysAvx2(query + static_cast<int64_t>(h) * head_dim, keys, first_head + h, head_dim,
                         j, scale, scores + h * num_keys + j);
    }
  }
  for (; j < num_keys; ++j) {
    for (int h = 0; h < num_heads; ++h) {
      scores[h * num_keys + j] = ScoreOneKeyAvx2(query + static_cast<int64_t>(h) * head_dim, keys,
                                                 first_head + h, head_dim, j, scale);
    }
  }
}

// WeightValuesAvx2 for heads [first_head, first_head + num_heads) at once: each value row once
// for every head, sums[h · head_dim + d] = fma(w, value, sums[…]) over the rows in order from zero
// (WeightValuesAvx2's chain per element). The sums are the calling thread's own until the end:
// kept in `out`, the line two threads' heads share would move between their cores every row.
void WeightValuesHeadsAvx2(const float* weights, const KvRows& values, int first_head,
                           int num_heads, int head_dim, int num_keys, float* out) {
  const int body = head_dim / 8 * 8;
  thread_local std::vector<float> scratch;  // grown only: the step loop does not allocate
  scratch.assign(static_cast<size_t>(num_heads) * head_dim, 0.0f);
  for (int j = 0; j < num_keys; ++j) {
    for (int h = 0; h < num_heads; ++h) {
      const int kv_head = first_head + h;
      const __m256 w = _mm256_set1_ps(weights[h * num_keys + j] * values.scale(j, kv_head));
      const int64_t at = j * values.row_stride + static_cast<int64_t>(kv_head) * head_dim;
      float* sums = scratch.data() + static_cast<int64_t>(h) * head_dim;
      for (int d = 0; d < body; d += 8) {
        _mm256_storeu_ps(sums + d,
                         _mm256_fmadd_ps(w, LoadKv8(values, at + d), _mm256_loadu_ps(sums + d)));
      }
    }
  }
  for (int h = 0; h < num_heads; ++h) {
    const int kv_head = first_head + h;
    float* head_out = out + static_cast<int64_t>(h) * head_dim;
    std::copy(scratch.data() + static_cast<int64_t>(h) * head_dim,
              scratch.data() + static_cast<int64_t>(h) * head_dim + body, head_out);
    for (int d = body; d < head_dim; ++d) {
      head_out[d] = WeightValueTail(weights + h * num_keys, values, kv_head, head_dim, num_keys, d);
    }
  }
}

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized (or -Wuninitialized) reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// ExpScoresAvx2 in 16-float steps (Exp16 gives Exp8's bits): double lane i still adds the scores
// j ≡ i mod 8 in order, the low 8 of a step before the high 8.
void ExpScoresAvx512(float* scores, int num_keys, float max_score, double lanes[8]) {
  const __m512 max = _mm512_set1_ps(max_score);
  __m512d sum = _mm512_setzero_pd();
  int j = 0;
  for (; j + 16 <= num_keys; j += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(scores + j), max));
    _mm512_storeu_ps(scores + j, e);
    sum = _mm512_add_pd(sum, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    sum = _mm512_add_pd(sum, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
  }
  if (j < num_keys) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (num_keys - j)) - 1);
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, scores + j), max));
    _mm512_mask_storeu_ps(scores + j, mask, e);
    if (j + 8 <= num_keys) sum = _mm512_add_pd(sum, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
  }
  _mm512_storeu_pd(lanes, sum);
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

void ScoreKeys(const float* query, const KvRows& keys, int kv_head, int head_dim, int num_keys,
               float scale, float* scores, CpuIsa isa) {
  if (isa >= CpuIsa::kAvx2)
    return ScoreKeysAvx2(query, keys, kv_head, head_dim, num_keys, scale, scores);
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  for (int j = 0; j < num_keys; ++j) {
    const int64_t at = j * keys.row_stride + head_offset;
    scores[j] = ScoreOnePortable(query, keys, at, head_dim) * keys.scale(j, kv_head) * scale;
  }
}

double ExpScoresAndSum(float* scores, int num_keys, CpuIsa isa) {
  const float max_score =
      isa >= CpuIsa::kAvx2 ? MaxScoreAvx2(scores, num_keys) : MaxScorePortable(scores, num_keys);
  double lanes[8] = {};
  const int body = num_keys / 8 * 8;
  if (isa >= CpuIsa::kAvx512) {
    ExpScoresAvx512(scores, num_keys, max_score, lanes);
  } else if (isa >= CpuIsa::kAvx2) {
    ExpScoresAvx2(scores, num_keys, max_score, lanes);
  } else {
    for (int j = 0; j < body; j += 8) {
      for (int i = 0; i < 8; ++i) {
        scores[j + i] = Exp(scores[j + i] - max_score);
        lanes[i] += scores[j + i];
      }
    }
    for (int j = body; j < num_keys; ++j) scores[j] = Exp(scores[j] - max_score);
  }
  double sum = ReduceLanes(lanes);
  for (int j = body; j < num_keys; ++j) sum += scores[j];
  return sum;
}

void Softmax(float* scores, int num_keys, CpuIsa isa) {
  const double sum = ExpScoresAndSum(scores, num_keys, isa);
  const float inv_sum = static_cast<float>(1.0 / sum);
  // Weights that would be subnormal (below twice the smallest normal float) are 0: each is less
  // than 1e-38 of a value, and every multiply-add of a subnormal weight takes a microcode assist
  // (a value pass with such weights ran ~12x slower, Emerald Rapids).
  const float keep = static_cast<float>(2.0 * std::numeric_limits<float>::min() * sum);
  if (isa >= CpuIsa::kAvx2) return ScaleScoresAvx2(scores, num_keys, keep, inv_sum);
  for (int j = 0; j < num_keys; ++j) scores[j] = (scores[j] < keep ? 0.0f : scores[j]) * inv_sum;
}

void WeightValues(const float* weights, const KvRows& values, int kv_head, int head_dim,
                  int num_keys, float* out, CpuIsa isa) {
  if (isa >= CpuIsa::kAvx2)
    return WeightValuesAvx2(weights, values, kv_head, head_dim, num_keys, out);
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  std::fill(out, out + head_dim, 0.0f);
  for (int j = 0; j < num_keys; ++j) {
    const float w = weights[j] * values.scale(j, kv_head);
    const int64_t at = j * values.row_stride + head_offset;
    for (int d = 0; d < head_dim; ++d) out[d] = std::fma(w, values.value(at + d), out[d]);
  }
}

void AttendHeadsInRowOrder(const float* query, const KvRows& keys, const KvRows& values,
                           int first_head, int num_heads, int head_dim, int num_keys, float scale,
                           float* scores, float* out, CpuIsa isa) {
  ScoreKeysHeadsAvx2(query, keys, first_head, num_heads, head_dim, num_keys, scale, scores);
  for (int h = 0; h < num_heads; ++h) Softmax(scores + h * num_keys, num_keys, isa);
  WeightValuesHeadsAvx2(scores, values, first_head, num_heads, head_dim, num_keys, out);
}

}  // namespace zinf::cpu
