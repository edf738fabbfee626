// CausalAttention: scores, a max-subtracted softmax and the weighted sum of values, per query head
// (the loops over keys and values are in cpu_attention_rows.h, and for blocks of queries at the
// AVX-512 and AVX2 levels in cpu_attention_rows_avx512.h and cpu_attention_rows_avx2_blocks.h).
#include "cpu/attention.h"

#include <algorithm>
#include <vector>

#include "cpu/attention_keys_avx512.h"
#include "cpu/attention_rows.h"
#include "cpu/attention_rows_avx2_blocks.h"
#include "cpu/attention_rows_avx512.h"

namespace zinf::cpu {

namespace {

// One work item: consecutive query tokens of one head, or (a decode token, num_tokens 1) heads
// [head, head + num_heads) of one KV group.
struct WorkItem {
  int chunk_idx;
  int head;
  int first_token;  // in the chunk
  int num_tokens;
  int num_heads;
};

// Where a work item's queries, outputs and KV rows are.
struct ItemView {
  QueryBlock block;
  float* out;          // the first query's
  int64_t out_stride;  // from one query's output to the next's
  KvRows keys, values;
};

ItemView ViewItem(const AttentionArgs& args, const WorkItem& item) {
  const AttentionShape& shape = args.shape;
  const SequenceChunk& chunk = args.chunks[item.chunk_idx];
  const int64_t row = chunk.token_offset + item.first_token;
  const int64_t head_offset = static_cast<int64_t>(item.head) * shape.head_dim;
  const bool heads = item.num_heads > 1;  // a block of heads, else of tokens
  QueryBlock block;
  block.query = args.q + row * args.q_stride + head_offset;
  block.query_stride = heads ? shape.head_dim : args.q_stride;
  block.num_queries = heads ? item.num_heads : item.num_tokens;
  block.first_num_keys = chunk.start_position + item.first_token + 1;
  block.keys_step = heads ? 0 : 1;
  block.kv_head = item.head / (shape.num_heads / shape.num_kv_heads);
  block.head_dim = shape.head_dim;
  return {block, args.out + row * args.out_stride + head_offset,
          heads ? shape.head_dim : args.out_stride, args.k_slot(chunk.kv_slot),
          args.v_slot(chunk.kv_slot)};
}

void AttendOneByOne(const AttentionArgs& args, const WorkItem& item, std::vector<float>& scores,
                    CpuIsa isa) {
  const ItemView view = ViewItem(args, item);
  const QueryBlock& block = view.block;
  for (int t = 0; t < block.num_queries; ++t) {
    const int num_keys = block.num_keys(t);
    scores.resize(num_keys);
    ScoreKeys(block.query + t * block.query_stride, view.keys, block.kv_head, block.head_dim,
              num_keys, args.shape.scale, scores.data(), isa);
    Softmax(scores.data(), num_keys, isa);
    WeightValues(scores.data(), view.values, block.kv_head, block.head_dim, num_keys,
                 view.out + t * view.out_stride, isa);
  }
}

// The same per-query operations, with the key and value loads shared by the block (isa kAvx512
// or kAvx2). `call` names this CausalAttention call (NewAttentionCall).
void AttendBlock(const AttentionArgs& args, const WorkItem& item, std::vector<float>& scores,
                 CpuIsa isa, uint64_t call) {
  const ItemView view = ViewItem(args, item);
  const QueryBlock& block = view.block;
  const int64_t stride = (block.last_num_keys() + 15) / 16 * 16;
  scores.resize(kAttentionBlockQueries * stride);
  if (isa >= CpuIsa::kAvx512 && block.keys_step == 1) {
    // Consecutive tokens: the thread's next blocks of this head score the same keys again, so
    // they are transposed once for all of them.
    const SequenceChunk& chunk = args.chunks[item.chunk_idx];
    ScoreKeysTransposedAvx512(block, view.keys, chunk.start_position + chunk.num_tokens, call,
                              args.shape.scale, scores.data(), stride);
  } else if (isa >= CpuIsa::kAvx512) {
    ScoreKeysBlockAvx512(block, view.keys, args.shape.scale, scores.data(), stride);
  } else {
    ScoreKeysBlockAvx2(block, view.keys, args.shape.scale, scores.data(), stride);
  }
  for (int t = 0; t < block.num_queries; ++t) {
    Softmax(scores.data() + t * stride, block.num_keys(t), isa);
  }
  if (isa >= CpuIsa::kAvx512) {
    WeightValuesBlockAvx512(block, scores.data(), stride, view.values, view.out, view.out_stride);
  } else {
    WeightValuesBlockAvx2(block, scores.data(), stride, view.values, view.out, view.out_stride);
  }
}

// How many items from `first` (before `end`) are all the heads of one decode token, each its own
// KV head (no grouping), at AVX2 or above: AttendDecodeHeads takes them together, reading whole
// KV rows in order. A thread with only some of a token's heads keeps the walks head by head: two
// threads each reading half of every row in order measured slower than that (Zen 4, 12 heads).
int64_t DecodeHeadRun(const AttentionArgs& args, const std::vector<WorkItem>& items, int64_t first,
                      int64_t end, CpuIsa isa) {
  if (isa < CpuIsa::kAvx2 || args.shape.num_heads != args.shape.num_kv_heads) return 1;
  const auto single = [](const WorkItem& item) {
    return item.num_tokens == 1 && item.num_heads == 1;
  };
  if (!single(items[first])) return 1;
  int64_t last = first;
  while (last + 1 < end && single(items[last + 1]) &&
         items[last + 1].chunk_idx == items[first].chunk_idx &&
         items[last + 1].head == items[last].head + 1) {
    ++last;
  }
  const int64_t run = last - first + 1;
  return items[first].head == 0 && run == args.shape.num_heads ? run : 1;
}

// Heads [item.head, item.head + num_heads) of one decode token, every KV row read once for all
// of them (AttendHeadsInRowOrder: the bits of AttendOneByOne).
void AttendDecodeHeads(const AttentionArgs& args, const WorkItem& item, int num_heads,
                       std::vector<float>& scores, CpuIsa isa) {
  const ItemView view = ViewItem(args, item);
  const QueryBlock& block = view.block;
  const int num_keys = block.num_keys(0);
  scores.resize(static_cast<size_t>(num_heads) * num_keys);
  AttendHeadsInRowOrder(block.query, view.keys, view.values, block.kv_head, num_heads,
                        block.head_dim, num_keys, args.shape.scale, scores.data(), view.out, isa);
}

// Query heads per decode item: from AVX2 up the heads sharing a KV head (grouped-query attention)
// in blocks, so each key and value row is read once for all of them, unless that would leave
// too few items to keep every thread busy (the bits are the same either way).
int HeadsPerDecodeItem(const AttentionArgs& args, int num_threads, CpuIsa isa) {
  const int group = args.shape.num_heads / args.shape.num_kv_heads;
  if (isa < CpuIsa::kAvx2 || group < 2) return 1;
  const int heads = std::min(group, kAttentionBlockQueries);
  int64_t decode_chunks = 0;
  for (const SequenceChunk& chunk : args.chunks) decode_chunks += chunk.num_tokens == 1 ? 1 : 0;
  const int64_t blocks = decode_chunks * args.shape.num_kv_heads * ((group + heads - 1) / heads);
  return blocks >= 2 * static_cast<int64_t>(num_threads) ? heads : 1;
}

}  // namespace

void CausalAttention(ThreadPool& pool, const AttentionArgs& args, CpuIsa isa) {
  // At the portable level every block is one token of one head. From AVX2 up a block of one (a
  // chunk's last token, or a decode token of a model without grouped heads) takes the one-query
  // loops: it has nothing to share.
  const int block_tokens = isa >= CpuIsa::kAvx2 ? kAttentionBlockQueries : 1;
  const int decode_heads = HeadsPerDecodeItem(args, pool.num_threads(), isa);
  const int group = args.shape.num_heads / args.shape.num_kv_heads;
  // Kept between calls (by the calling thread): the step loop does not allocate.
  thread_local std::vector<WorkItem> calling_thread_items;
  std::vector<WorkItem>& items = calling_thread_items;  // the workers read the caller's list
  items.clear();
  // Ordered by chunk, head, then token: the heads of a chunk split evenly between threads (the
  // later tokens of a prefill chunk see more keys), and each thread's items reuse the KV rows.
  for (size_t c = 0; c < args.chunks.size(); ++c) {
    const int chunk_idx = static_cast<int>(c);
    const int num_tokens = args.chunks[c].num_tokens;
    for (int head = 0; head < args.shape.num_heads;) {
      if (num_tokens == 1 && decode_heads > 1) {
        const int group_end = (head / group + 1) * group;
        const int heads = std::min(decode_heads, group_end - head);
        items.push_back({chunk_idx, head, 0, 1, heads});
        head += heads;
        continue;
      }
      for (int t = 0; t < num_tokens; t += block_tokens) {
        items.push_back({chunk_idx, head, t, std::min(block_tokens, num_tokens - t), 1});
      }
      ++head;
    }
  }
  const uint64_t call = NewAttentionCall();
  pool.ParallelFor(static_cast<int64_t>(items.size()), [&](int64_t begin, int64_t end) {
    // Reused across steps by each pool thread: no allocation once it has grown to the context.
    thread_local std::vector<float> scores;
    for (int64_t i = begin; i < end;) {
      if (items[i].num_tokens > 1 || items[i].num_heads > 1) {
        AttendBlock(args, items[i], scores, isa, call);
        ++i;
      } else if (const int64_t run = DecodeHeadRun(args, items, i, end, isa); run > 1) {
        AttendDecodeHeads(args, items[i], static_cast<int>(run), scores, isa);
        i += run;
      } else {
        AttendOneByOne(args, items[i], scores, isa);
        ++i;
      }
    }
  });
}

}  // namespace zinf::cpu
