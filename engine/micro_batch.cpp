// SplitIntoMicroBatches: fixed row ranges, each chunk intersected with each range.
#include "engine/micro_batch.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/model.h"

namespace zinf {

void SplitIntoMicroBatches(const StepBatch& batch, int max_rows, std::vector<MicroBatch>& out) {
  ZINF_CHECK(max_rows > 0, "micro-batch of {} rows", max_rows);
  const int num_rows = static_cast<int>(batch.tokens.size());
  const int count = (num_rows + max_rows - 1) / max_rows;
  out.resize(count);
  for (int m = 0; m < count; ++m) {
    MicroBatch& micro = out[m];
    micro.row_begin = m * max_rows;
    micro.num_rows = std::min(max_rows, num_rows - micro.row_begin);
    micro.tokens = std::span(batch.tokens).subspan(micro.row_begin, micro.num_rows);
    micro.positions = std::span(batch.positions).subspan(micro.row_begin, micro.num_rows);
    micro.chunks.clear();
    const int row_end = micro.row_begin + micro.num_rows;
    for (const SequenceChunk& chunk : batch.chunks) {
      const int begin = std::max(chunk.token_offset, micro.row_begin);
      const int end = std::min(chunk.token_offset + chunk.num_tokens, row_end);
      if (begin >= end) continue;
      SequenceChunk part = chunk;
      part.start_position = chunk.start_position + (begin - chunk.token_offset);
      part.num_tokens = end - begin;
      part.token_offset = begin - micro.row_begin;
      micro.chunks.push_back(part);
    }
  }
}

}  // namespace zinf
