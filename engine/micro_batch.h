// The block schedule's unit: a step's rows split into micro-batches that run one after another
// through a layer before the next layer is touched, so a step can carry many more tokens than the
// activation buffers hold while every layer's weights are still read once per step.
#pragma once

#include <span>
#include <vector>

#include "engine/backend.h"
#include "engine/tokenizer.h"

namespace zinf {

struct StepBatch;

struct MicroBatch {
  int row_begin = 0;  // first row of the step
  int num_rows = 0;
  std::span<const TokenId> tokens;
  std::span<const int> positions;
  std::vector<SequenceChunk> chunks;  // token_offset relative to row_begin
};

// Splits `batch` into consecutive micro-batches of at most `max_rows` rows, reusing `out`'s
// storage. A sequence's chunk that crosses a boundary is split at that position; micro-batches
// run in order, so the later part's causal attention still finds the earlier positions' keys.
void SplitIntoMicroBatches(const StepBatch& batch, int max_rows, std::vector<MicroBatch>& out);

}  // namespace zinf
