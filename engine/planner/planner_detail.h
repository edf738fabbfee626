// Pieces the CPU and CUDA planners share: the order extents claim residency, the arithmetic a
// step does, and sizes for messages. Internal to engine/planner*.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/byte_units.h"
#include "engine/planner/planner.h"

namespace zinf::planner_detail {

// Order in which extents claim residency. Per byte kept resident, every extent saves the same
// transfer time; but the largest extent still moved sets the size of every staging buffer (and
// device slot), so the largest go first. Among equals the embeddings lead (only a few of their rows
// are used, yet moving them moves them whole), then the layers spread over the model (their
// indices' bits reversed: however many are kept, each streamed layer's read overlaps resident
// layers' products), then file order. A mixture-of-experts model's experts come after every
// always-used extent: each is used by only some steps; with a routing profile the most used first.
std::vector<size_t> ResidencyOrder(const std::vector<ExtentInfo>& extents,
                                   const RoutingProfile* routing);

// The largest extent placed on `tier` (0 when none is).
uint64_t LargestOn(const std::vector<ExtentInfo>& extents, const std::vector<Tier>& placement,
                   Tier tier);

// Distinct extent sizes in `order`, largest first: the caps KeepGreedily is tried with (the first
// forces nothing).
std::vector<uint64_t> DistinctSizes(const std::vector<ExtentInfo>& extents,
                                    const std::vector<size_t>& order);

// The bytes of the buffers a placement needs beside its kept extents (a staging ring, slots),
// from the size of the largest extent still moved (0 when none is).
using RingBytes = std::function<uint64_t(uint64_t largest_moved)>;
// A ring of `buffers` buffers sized to the largest extent moved.
RingBytes RingOf(int buffers);

// Moves extents from tier `moved` to tier `kept` within a budget that also holds `ring` (sized by
// what is left on `moved`): first every extent larger than `cap`, then, in `order`, each further
// one while kept bytes + ring ≤ room. Returns the kept bytes, or nullopt when the forced extents
// and their ring do not fit. The cap matters when a few extents are much larger than the rest (a
// 32k-vocabulary embedding and head beside small layers): one at a time, the first of them never
// fits, since the second, still moved, sizes the ring. O(n log n), for models of 10^4 extents
// (one per expert).
std::optional<uint64_t> KeepGreedily(const std::vector<ExtentInfo>& extents,
                                     const std::vector<size_t>& order, uint64_t cap,
                                     const RingBytes& ring, uint64_t room, Tier kept, Tier moved,
                                     std::vector<Tier>& placement);

// The bytes of extent `idx` a step of `tokens` tokens is expected to use: all of an always-used
// extent; of an expert's, the chance that some token routes to it, 1 − (1 − p)^tokens with p its
// token share (the profile's, or k/E: RoutedShare).
double StepBytes(const Checkpoint& checkpoint, const RoutingProfile* routing, size_t idx,
                 int tokens);
// StepBytes summed over the extents `placement` puts on `tier`, or over every extent.
double StepBytesOn(const Checkpoint& checkpoint, const RoutingProfile* routing,
                   const std::vector<Tier>& placement, Tier tier, int tokens);
double StepBytesUsed(const Checkpoint& checkpoint, const RoutingProfile* routing, int tokens);
// Staging buffers beyond the dense prefetch ring for streamed experts: as many as a step is
// expected to route to per layer (at most 16), so their reads are in flight together.
int ExpertStagingBuffers(const ModelConfig& config, int tokens);

// Parameters a token multiplies by (the embedding table is a lookup; of a sparse layer's experts,
// the k it is routed to).
double ParameterCount(const Checkpoint& checkpoint);

// CUDA under bf16 compute: the int8 / int4 matrices a step of `tokens` rows dequantises to bf16
// before their GEMMs (every dense matrix; an expert's when the step routes to it, at StepBytes'
// share; none the CPU computes), and the seconds that takes at the calibrated per-weight rates,
// which include reading their stored bytes.
struct DequantWork {
  double elements = 0;
  double matrices = 0;      // each one more launch
  double stored_bytes = 0;  // read by the dequantisation, not by the GEMMs
  double seconds = 0;
};
DequantWork GpuDequantWork(const Checkpoint& checkpoint, const RoutingProfile* routing,
                           const Placement& placement, int tokens, const Bandwidths& rates);

// Seconds the CPU's products with one extent take in a step of `tokens` rows, each matrix at the
// rate of the rows it multiplies (an expert's: its share of the step's).
double ExtentMatmulSeconds(const Checkpoint& checkpoint, const ExtentInfo& extent, int tokens,
                           const Bandwidths& rates);

// Seconds the CPU backend's products take per step of `tokens` rows: each tensor's 2 × elements ×
// tokens FLOPs (an expert's: × k/E, the share of tokens routed to it) at its dtype's kernel rate.
double CpuMatmulSeconds(const Checkpoint& checkpoint, int tokens, const Bandwidths& rates);

// Seconds the CPU takes per decode step to attend over a KV cache of `kv_bytes` in DRAM sized
// for the workload's max_context: each of the batch's rows' query heads over its mean_context
// keys (max_context when 0) in every layer, 4 · head_dim FLOPs per head and key (the scores and
// the weighted values) at the calibrated attention rate, or reading the attended share of the
// cache, whichever is slower.
double CpuAttentionSeconds(const ModelConfig& config, const Workload& workload, uint64_t kv_bytes,
                           const Bandwidths& rates);

// CUDA, host_computes_experts: per step, the bytes of the experts the CPU computes (those not
// on the device) a step is expected to use, and the seconds the CPU takes for them: reading those
// bytes from DRAM or their products (k/E of the tokens each), whichever is slower.
struct HostExperts {
  double step_bytes = 0;
  double seconds = 0;
};
HostExperts HostExpertWork(const Checkpoint& checkpoint, const RoutingProfile* routing,
                           const Placement& placement, int tokens, const Bandwidths& rates);

}  // namespace zinf::planner_detail

namespace zinf {
std::string CudaSummary(const Plan& plan);
}  // namespace zinf
