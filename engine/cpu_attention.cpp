// CausalAttention: scores, a max-subtracted softmax and the weighted sum of values, per query head
// (the loops over keys and values are in cpu_attention_rows.h).
#include "engine/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu_attention_rows.h"

namespace zinf::cpu {

namespace {

struct QueryRef {
  int chunk_idx;
  int token_in_chunk;
};

void AttendOneHead(const AttentionArgs& args, const SequenceChunk& chunk, int token_in_chunk,
                   int head, std::vector<float>& scores, CpuIsa isa) {
  const AttentionShape& shape = args.shape;
  const int head_dim = shape.head_dim;
  const int kv_head = head / (shape.num_heads / shape.num_kv_heads);
  const int64_t row = chunk.token_offset + token_in_chunk;
  const int num_keys = chunk.start_position + token_in_chunk + 1;
  const float* query = args.q + row * args.q_stride + static_cast<int64_t>(head) * head_dim;
  const KvRows keys = args.k_slot(chunk.kv_slot);
  const KvRows values = args.v_slot(chunk.kv_slot);
  scores.resize(num_keys);
  ScoreKeys(query, keys, kv_head, head_dim, num_keys, shape.scale, scores.data(), isa);
  const double sum = ExpScoresAndSum(scores.data(), num_keys, isa);
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (float& score : scores) score *= inv_sum;
  float* out = args.out + row * args.out_stride + static_cast<int64_t>(head) * head_dim;
  WeightValues(scores.data(), values, kv_head, head_dim, num_keys, out, isa);
}

}  // namespace

void CausalAttention(ThreadPool& pool, const AttentionArgs& args) {
  // Kept between calls (by the calling thread): the step loop does not allocate.
  thread_local std::vector<QueryRef> calling_thread_queries;
  std::vector<QueryRef>& queries = calling_thread_queries;  // the workers read the caller's list
  queries.clear();
  for (size_t c = 0; c < args.chunks.size(); ++c) {
    for (int i = 0; i < args.chunks[c].num_tokens; ++i) {
      queries.push_back({static_cast<int>(c), i});
    }
  }
  const int num_heads = args.shape.num_heads;
  const CpuIsa isa = ActiveCpuIsa();
  pool.ParallelFor(static_cast<int64_t>(queries.size()) * num_heads, [&](int64_t begin,
                                                                          int64_t end) {
    // Reused across steps by each pool thread: no allocation once it has grown to the context.
    thread_local std::vector<float> scores;
    for (int64_t item = begin; item < end; ++item) {
      const QueryRef& query = queries[item / num_heads];
      AttendOneHead(args, args.chunks[query.chunk_idx], query.token_in_chunk,
                    static_cast<int>(item % num_heads), scores, isa);
    }
  });
}

}  // namespace zinf::cpu
