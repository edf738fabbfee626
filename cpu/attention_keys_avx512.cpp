// ScoreKeysTransposedAvx512: each query's dot product with a key keeps ScoreKeys' operation
// sequence (lane l an fma chain over dimensions ≡ l mod 8, ReduceLanes, the tail one fma at a
// time, then the row's scale and the scale), only 16 keys side by side in a register's lanes.
#include "cpu/attention_keys_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "cpu/transpose_avx512.h"

namespace zinf::cpu {

namespace {

constexpr int kBlockKeys = 16;

struct alignas(64) KeyLanes {  // one dimension of a block's 16 keys
  float key[kBlockKeys];
};

// One KV head's keys of one call, widened to f32 (exact) and transposed: block b's dimension d at
// lanes[b · head_dim + d], lanes past the last key zero.
struct TransposedKeys {
  std::vector<KeyLanes> lanes;  // grown only
  const void* source = nullptr;
  int64_t row_stride = 0;
  int kv_head = -1, head_dim = 0;
  uint64_t call = 0;
  int filled = 0;  // keys transposed
};

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized (or -Wuninitialized) reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// Key j's head as f32 into `row` (head_dim floats).
void WidenKey(const KvRows& keys, int64_t at, int head_dim, float* row) {
  int d = 0;
  if (keys.f32 != nullptr) {
    std::copy(keys.f32 + at, keys.f32 + at + head_dim, row);
    return;
  }
  if (keys.f16 != nullptr) {
    for (; d + 16 <= head_dim; d += 16) {
      _mm512_storeu_ps(row + d, _mm512_cvtph_ps(_mm256_loadu_si256(
                                    reinterpret_cast<const __m256i*>(keys.f16 + at + d))));
    }
  }
  for (; d < head_dim; ++d) row[d] = keys.value(at + d);
}

// The call's keys of kv_head transposed up to at least num_keys (whole blocks where the sequence
// has their keys: available_keys of them), this thread's copy.
const KeyLanes* TransposeKeysUpTo(const KvRows& keys, int kv_head, int head_dim, int num_keys,
                                  int available_keys, uint64_t call) {
  thread_local TransposedKeys t;
  const void* source = keys.data();
  if (t.call != call || t.source != source || t.row_stride != keys.row_stride ||
      t.kv_head != kv_head || t.head_dim != head_dim) {
    t = TransposedKeys{std::move(t.lanes), source, keys.row_stride, kv_head, head_dim, call, 0};
  }
  if (t.filled >= num_keys) return t.lanes.data();
  const int target = std::max(
      num_keys, std::min((num_keys + kBlockKeys - 1) / kBlockKeys * kBlockKeys, available_keys));
  const auto needed = static_cast<size_t>((target + kBlockKeys - 1) / kBlockKeys * head_dim);
  if (t.lanes.size() < needed) t.lanes.resize(needed);
  thread_local std::vector<float> rows;  // a block's keys widened, head_dim apart
  rows.resize(static_cast<size_t>(kBlockKeys) * head_dim);
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;
  int j = t.filled;
  while (j < target) {
    KeyLanes* block = t.lanes.data() + static_cast<int64_t>(j / kBlockKeys) * head_dim;
    if (j % kBlockKeys == 0 && j + kBlockKeys <= target) {  // a whole block
      for (int e = 0; e < kBlockKeys; ++e)
        WidenKey(keys, (j + e) * keys.row_stride + head_offset, head_dim, &rows[e * head_dim]);
      int d = 0;
      for (; d + 16 <= head_dim; d += 16) {  // dimensions d .. d + 15 of the 16 keys
        __m512 keys16[16];
        for (int e = 0; e < kBlockKeys; ++e) keys16[e] = _mm512_loadu_ps(&rows[e * head_dim + d]);
        Transpose16(keys16);  // keys16[k]: dimension d + k of the 16 keys
        for (int k = 0; k < 16; ++k) _mm512_store_ps(block[d + k].key, keys16[k]);
      }
      for (; d < head_dim; ++d) {
        for (int e = 0; e < kBlockKeys; ++e) block[d].key[e] = rows[e * head_dim + d];
      }
      j += kBlockKeys;
      continue;
    }
    if (j % kBlockKeys == 0) std::fill(block, block + head_dim, KeyLanes{});
    WidenKey(keys, j * keys.row_stride + head_offset, head_dim, rows.data());
    for (int d = 0; d < head_dim; ++d) block[d].key[j % kBlockKeys] = rows[d];
    ++j;
  }
  t.filled = target;
  return t.lanes.data();
}

// Queries q[0 .. kQueries) against kBlocks blocks of 16 keys from `blocks` (head_dim lines
// apart): block k's scores for query i to out[i] + 16k. 3 × 1 or 1 × 3 tiles keep 24 accumulators,
// and each dimension loads kBlocks key registers and kQueries broadcasts for kQueries · kBlocks
// fmas.
template <int kQueries, int kBlocks>
inline void ScoreTile(const float* const* q, const KeyLanes* blocks, int head_dim,
                      const KeyLanes* row_scales, bool scaled_rows, __m512 scale,
                      float* const* out) {
  __m512 acc[kQueries][kBlocks][8];
#pragma GCC unroll 4
  for (int i = 0; i < kQueries; ++i)
#pragma GCC unroll 4
    for (int k = 0; k < kBlocks; ++k)
#pragma GCC unroll 8
      for (int l = 0; l < 8; ++l) acc[i][k][l] = _mm512_setzero_ps();
  const int body = head_dim / 8 * 8;
  for (int c = 0; c < body; c += 8) {
#pragma GCC unroll 8
    for (int l = 0; l < 8; ++l) {
      __m512 keys[kBlocks];
#pragma GCC unroll 4
      for (int k = 0; k < kBlocks; ++k) {
        keys[k] = _mm512_load_ps(blocks[k * head_dim + c + l].key);
        // Kept in a register: folded into each fma, a key would be loaded once per query, and
        // the loads (then two per fma with the query's broadcast) bound the loop.
        asm("" : "+v"(keys[k]));
      }
#pragma GCC unroll 4
      for (int i = 0; i < kQueries; ++i) {
        const __m512 query = _mm512_set1_ps(q[i][c + l]);
#pragma GCC unroll 4
        for (int k = 0; k < kBlocks; ++k)
          acc[i][k][l] = _mm512_fmadd_ps(query, keys[k], acc[i][k][l]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < kQueries; ++i) {
#pragma GCC unroll 4
    for (int k = 0; k < kBlocks; ++k) {
      const __m512(&a)[8] = acc[i][k];
      const __m512 s04 = _mm512_add_ps(a[0], a[4]), s26 = _mm512_add_ps(a[2], a[6]);
      const __m512 s15 = _mm512_add_ps(a[1], a[5]), s37 = _mm512_add_ps(a[3], a[7]);
      __m512 sum = _mm512_add_ps(_mm512_add_ps(s04, s26), _mm512_add_ps(s15, s37));
      for (int d = body; d < head_dim; ++d) {
        sum = _mm512_fmadd_ps(_mm512_set1_ps(q[i][d]), _mm512_load_ps(blocks[k * head_dim + d].key),
                              sum);
      }
      // An int8 key's dot times its scale.
      if (scaled_rows) sum = _mm512_mul_ps(sum, _mm512_load_ps(row_scales[k].key));
      _mm512_storeu_ps(out[i] + k * kBlockKeys, _mm512_mul_ps(sum, scale));
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace

uint64_t NewAttentionCall() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

void ScoreKeysTransposedAvx512(const QueryBlock& block, const KvRows& keys, int available_keys,
                               uint64_t call, float scale, float* scores, int64_t score_stride) {
  const int num_keys = block.last_num_keys();
  const KeyLanes* lanes =
      TransposeKeysUpTo(keys, block.kv_head, block.head_dim, num_keys, available_keys, call);
  const int num_blocks = (num_keys + kBlockKeys - 1) / kBlockKeys;
  const bool scaled_rows = keys.scales != nullptr;
  thread_local std::vector<KeyLanes> row_scales;  // block b's 16 keys' scales (int8 caches)
  if (scaled_rows) {
    row_scales.assign(num_blocks, KeyLanes{});
    for (int j = 0; j < num_keys; ++j)
      row_scales[j / kBlockKeys].key[j % kBlockKeys] = keys.scale(j, block.kv_head);
  }
  const KeyLanes* block_scales = scaled_rows ? row_scales.data() : nullptr;
  const __m512 scale_vector = _mm512_set1_ps(scale);
  const int hd = block.head_dim;
  auto query = [&](int i) { return block.query + i * block.query_stride; };
  auto out = [&](int i, int b) { return scores + i * score_stride + b * kBlockKeys; };
  // Three blocks of keys at a time (12 KiB for 64 dimensions), in L1 for every query: the queries
  // three at a time against each block, then the one or two left, each against the three blocks
  // at once (as many loads per fma; from L2 they had waited on it, 1.85x the time per fma).
  const int triples = block.num_queries / 3 * 3;
  for (int first_block = 0; first_block < num_blocks; first_block += 3) {
    const int blocks = std::min(3, num_blocks - first_block);
    for (int b = first_block; b < first_block + blocks; ++b) {
      for (int first = 0; first < triples; first += 3) {
        const float* q[3] = {query(first), query(first + 1), query(first + 2)};
        float* o[3] = {out(first, b), out(first + 1, b), out(first + 2, b)};
        ScoreTile<3, 1>(q, lanes + b * hd, hd, block_scales + (scaled_rows ? b : 0), scaled_rows,
                        scale_vector, o);
      }
    }
    for (int i = triples; i < block.num_queries; ++i) {
      const float* q[1] = {query(i)};
      float* o[1] = {out(i, first_block)};
      const KeyLanes* group = lanes + first_block * hd;
      const KeyLanes* group_scales = block_scales + (scaled_rows ? first_block : 0);
      switch (blocks) {
        case 3: ScoreTile<1, 3>(q, group, hd, group_scales, scaled_rows, scale_vector, o); break;
        case 2: ScoreTile<1, 2>(q, group, hd, group_scales, scaled_rows, scale_vector, o); break;
        default: ScoreTile<1, 1>(q, group, hd, group_scales, scaled_rows, scale_vector, o);
      }
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace zinf::cpu
