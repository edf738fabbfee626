// Where every extent of a run lives and how the moved ones are staged: the planner's answer,
// consumed unchanged by the weight source (io/), Model and the backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zinf {

enum class Tier : uint8_t {
  kDevice,  // compute-device memory (the GPU's; on the CPU backend, DRAM is the device)
  kDram,    // host DRAM (page-locked), copied to the device per step
  kNvme,    // the weights file, streamed through staging buffers every step
};
const char* TierName(Tier tier);

enum class BackendKind : uint8_t { kCpu, kCuda };
// Where a tier's bytes really are, for people: on the CPU backend kDevice is DRAM; kNvme is
// whatever disk holds the weights file.
const char* TierPlace(Tier tier, BackendKind backend);
const char* BackendName(BackendKind backend);

// With extents on NVMe, a CUDA placement's staging holds one buffer beyond its prefetch depth + 1
// for the GPU still copying out of the extent last released (io::TieredOptions::copy_buffers).
inline constexpr int kCudaCopyBuffers = 1;

struct Placement {
  BackendKind backend = BackendKind::kCpu;
  std::vector<Tier> tiers;  // per extent, in checkpoint order
  int prefetch_depth = 0;   // extents read ahead of the one computed
  // The weight source's DRAM staging ring (copy buffers included): NVMe extents every step, and
  // on CUDA the device-resident ones once, on their way to the GPU.
  int staging_buffers = 0;
  int copy_buffers = 0;
  // Mixture of experts: buffers beyond the dense prefetch ring, so a layer's routed experts are
  // read together (counted in staging_buffers).
  int expert_buffers = 0;
  uint64_t staging_buffer_bytes = 0;
  // CUDA: device slots the extents not held on the device are copied into every step.
  int device_slots = 0;
  // CUDA, mixture of experts (--moe-experts cpu): the experts the device does not hold are
  // computed by the CPU where they are, in DRAM, instead of being copied to the device; only the
  // routed tokens' rows cross PCIe. The device holds attention, routers and its resident experts.
  bool host_computes_experts = false;

  // The weight source keeps the extent in host memory for the whole run (read once at start).
  bool KeptInDram(size_t extent) const {
    return backend == BackendKind::kCpu ? tiers[extent] != Tier::kNvme
                                        : tiers[extent] == Tier::kDram;
  }
  // The backend holds the extent in its own memory, loaded once at start (Backend::LoadResident);
  // the layer loop never asks the weight source for it.
  bool HeldByBackend(size_t extent) const {
    return backend == BackendKind::kCuda && tiers[extent] == Tier::kDevice;
  }
  // host_computes_experts: the CPU computes this extent, an expert the device does not hold.
  bool ComputedOnHost(size_t extent, bool is_expert) const {
    return host_computes_experts && is_expert && !HeldByBackend(extent);
  }
  uint64_t staging_bytes() const { return staging_buffers * staging_buffer_bytes; }

  // Read like the per-extent tiers.
  size_t size() const { return tiers.size(); }
  Tier operator[](size_t extent) const { return tiers[extent]; }
  auto begin() const { return tiers.begin(); }
  auto end() const { return tiers.end(); }
};

}  // namespace zinf
