// Which product follows which in a decode step, learned from the calls themselves, so that a pool
// thread done with its part of one product can read ahead its part of the next (cpu/read_ahead.h).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "cpu/isa.h"
#include "cpu/read_ahead.h"
#include "engine/backend.h"

namespace zinf::cpu {

// The weights of one product call, laid end to end as CpuBackend::MatMuls splits them.
struct ProductCall {
  static constexpr int kMaxWeights = 4;  // a segment of read-ahead each
  static_assert(kMaxWeights <= ReadAheadPlan::kMaxSegments);
  std::array<Weight, kMaxWeights> weights;
  int count = 0;
  int64_t total_rows = 0;
};

// Written by the calling thread only (Record, before it hands the call to the pool); the pool's
// threads read what Record returned while they run that call.
class ProductSequence {
 public:
  // Notes that `projections` came after the previous recorded call, and returns what came after
  // them last time (nullptr: not known yet, or more than kMaxWeights projections).
  const ProductCall* Record(std::span<const Backend::Projection> projections);
  // A call that is not recorded (many tokens) breaks the chain: the next recorded call did not
  // follow the last recorded one.
  void Forget() { last_ = nullptr; }

 private:
  std::unordered_map<const void*, ProductCall> next_;  // by the first weight's data
  const void* last_ = nullptr;
};

// Sets `plan` to rows [begin_fraction, end_fraction) of `next`'s rows laid end to end, read as
// the kernels at `isa` read them for `tokens` tokens, at most budget_bytes: the part the calling
// thread is likely to get of that call when its share of the pool's work holds. The rows left
// over after the one-token kernels' strided tiles (fewer than two tiles) are left out.
void PlanReadAhead(const ProductCall& next, int64_t tokens, CpuIsa isa, double begin_fraction,
                   double end_fraction, int64_t budget_bytes, ReadAheadPlan& plan);

}  // namespace zinf::cpu
