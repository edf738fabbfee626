// The ordering of the GPU weight-streaming pipeline, independent of any device: extents that are
// not resident in device memory are copied into a ring of device slots on a copy stream while the
// compute stream works on earlier ones. The CUDA backend turns each answer into event records and
// waits; tests replay the same answers on simulated streams.
#pragma once

#include <cstdint>
#include <vector>

namespace zinf::cuda {

// One streamed extent's turn in the ring.
struct SlotUse {
  int slot = 0;
  int64_t copy = 0;       // sequence number of this copy (and of the compute that reads it)
  int64_t wait_for = -1;  // the compute that must finish before this copy may overwrite the
                          // slot: the slot's previous reader; -1 when the slot is fresh
};

// Not thread-safe: the forward-pass thread drives it.
class SlotRing {
 public:
  // At least two slots, so one can fill while another is read. Throws zinf::Error otherwise.
  explicit SlotRing(int num_slots);

  // The next streamed extent's slot: slots are taken round-robin, so up to num_slots - 1 copies
  // run ahead of the compute that reads the oldest.
  SlotUse Next();
  int num_slots() const { return static_cast<int>(last_reader_.size()); }

 private:
  std::vector<int64_t> last_reader_;  // per slot: the copy number whose compute reads it last
  int64_t next_copy_ = 0;
};

}  // namespace zinf::cuda
