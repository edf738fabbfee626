// CausalAttention: scores, a max-subtracted softmax and the weighted sum of values, per query head.
#include "engine/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace zinf::cpu {

namespace {

struct QueryRef {
  int chunk_idx;
  int token_in_chunk;
};

void AttendOneHead(const AttentionArgs& args, const SequenceChunk& chunk, int token_in_chunk,
                   int head, std::vector<float>& scores) {
  const AttentionShape& shape = args.shape;
  const int head_dim = shape.head_dim;
  const int kv_head = head / (shape.num_heads / shape.num_kv_heads);
  const int64_t row = chunk.token_offset + token_in_chunk;
  const int num_keys = chunk.start_position + token_in_chunk + 1;
  const float* query = args.q + row * args.q_stride + static_cast<int64_t>(head) * head_dim;
  const KvRows keys = args.k_slot(chunk.kv_slot);
  const KvRows values = args.v_slot(chunk.kv_slot);
  const int64_t head_offset = static_cast<int64_t>(kv_head) * head_dim;

  scores.resize(num_keys);
  float max_score = -INFINITY;
  for (int j = 0; j < num_keys; ++j) {
    const int64_t at = j * keys.row_stride + head_offset;
    float dot = 0;
    if (keys.f32 != nullptr) {
      for (int d = 0; d < head_dim; ++d) dot += query[d] * keys.f32[at + d];
    } else {
      for (int d = 0; d < head_dim; ++d) dot += query[d] * static_cast<float>(keys.i8[at + d]);
      dot *= keys.scales[j * keys.num_kv_heads + kv_head];
    }
    scores[j] = dot * shape.scale;
    max_score = std::max(max_score, scores[j]);
  }
  double sum = 0;
  for (int j = 0; j < num_keys; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  float* out = args.out + row * args.out_stride + static_cast<int64_t>(head) * head_dim;
  std::fill(out, out + head_dim, 0.0f);
  for (int j = 0; j < num_keys; ++j) {
    const float weight = scores[j] * inv_sum;
    const int64_t at = j * values.row_stride + head_offset;
    if (values.f32 != nullptr) {
      for (int d = 0; d < head_dim; ++d) out[d] += weight * values.f32[at + d];
    } else {
      const float scaled = weight * values.scales[j * values.num_kv_heads + kv_head];
      for (int d = 0; d < head_dim; ++d) out[d] += scaled * static_cast<float>(values.i8[at + d]);
    }
  }
}

}  // namespace

void CausalAttention(ThreadPool& pool, const AttentionArgs& args) {
  std::vector<QueryRef> queries;
  for (size_t c = 0; c < args.chunks.size(); ++c) {
    for (int i = 0; i < args.chunks[c].num_tokens; ++i) {
      queries.push_back({static_cast<int>(c), i});
    }
  }
  const int num_heads = args.shape.num_heads;
  pool.ParallelFor(static_cast<int64_t>(queries.size()) * num_heads, [&](int64_t begin,
                                                                          int64_t end) {
    // Reused across steps by each pool thread: no allocation once it has grown to the context.
    thread_local std::vector<float> scores;
    for (int64_t item = begin; item < end; ++item) {
      const QueryRef& query = queries[item / num_heads];
      AttendOneHead(args, args.chunks[query.chunk_idx], query.token_in_chunk,
                    static_cast<int>(item % num_heads), scores);
    }
  });
}

}  // namespace zinf::cpu
