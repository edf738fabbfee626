// ProductSequence, and a thread's read-ahead of its part of the next product, in the order the
// kernels will read it.
#include "cpu/product_sequence.h"

#include <algorithm>
#include <cmath>

#include "cpu/matmul.h"
#include "cpu/tiling.h"
#include "engine/quantized.h"

namespace zinf::cpu {

namespace {

// Bytes of one row's values (int4's group parameters lie elsewhere and are left to the kernel).
int64_t RowBytes(const Weight& w) {
  return IsQuantized(w.dtype) ? LayoutOf(w.dtype, w.rows, w.cols, w.group_size).row_bytes()
                              : w.cols * static_cast<int64_t>(DTypeSize(w.dtype));
}

// Rows [from, to) of w. As many tokens as go through the lone token's tiles: the streams of
// ForEachStridedTile (tiling.h), a row of each in turn, as many as those tiles have rows
// (OneTokenTileStreams); more tokens: the rows in order.
ReadAheadSegment RowsSegment(const Weight& w, int64_t from, int64_t to, int64_t tokens,
                             CpuIsa isa) {
  const int streams = OneTokenTileStreams(w.dtype, isa);
  const int64_t row_bytes = RowBytes(w);
  const std::byte* first = static_cast<const std::byte*>(w.data) + from * row_bytes;
  const int64_t step = StridedTileStep(to - from, streams);
  const int64_t all = (to - from) * row_bytes;
  if (tokens > OneTokenTileMaxTokens(w.dtype, isa) || step < 1) return {first, 0, 1, all, all};
  return {first, step * row_bytes, streams, step * row_bytes, row_bytes};
}

}  // namespace

const ProductCall* ProductSequence::Record(std::span<const Backend::Projection> projections) {
  if (projections.empty() || projections.size() > ProductCall::kMaxWeights) {
    last_ = nullptr;
    return nullptr;
  }
  const void* key = projections[0].w.data;
  if (last_ != nullptr) {
    ProductCall& call = next_[last_];
    call.count = static_cast<int>(projections.size());
    call.total_rows = 0;
    for (int i = 0; i < call.count; ++i) {
      call.weights[i] = projections[i].w;
      call.total_rows += projections[i].w.rows;
    }
  }
  last_ = key;
  const auto found = next_.find(key);
  return found == next_.end() ? nullptr : &found->second;
}

void PlanReadAhead(const ProductCall& next, int64_t tokens, CpuIsa isa, double begin_fraction,
                   double end_fraction, int64_t budget_bytes, ReadAheadPlan& plan) {
  plan.Clear();
  const auto begin = static_cast<int64_t>(std::llround(begin_fraction * next.total_rows));
  const auto end = static_cast<int64_t>(std::llround(end_fraction * next.total_rows));
  int64_t first_row = 0;
  for (int i = 0; i < next.count; ++i) {
    const Weight& w = next.weights[i];
    const int64_t from = std::max(begin, first_row) - first_row;
    const int64_t to = std::min(end, first_row + w.rows) - first_row;
    if (from < to && w.data != nullptr) plan.Add(RowsSegment(w, from, to, tokens, isa));
    first_row += w.rows;
  }
  plan.Start(budget_bytes);
}

}  // namespace zinf::cpu
