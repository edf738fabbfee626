// SlotRing: round-robin slots; a slot's next copy waits for its previous reader's compute.
#include "cuda/host/slot_ring.h"

#include "engine/error.h"

namespace zinf::cuda {

SlotRing::SlotRing(int num_slots) {
  if (num_slots < 2) {
    Fail("the weight-streaming ring needs at least 2 device slots (one filling while one is read), "
         "got {}",
         num_slots);
  }
  last_reader_.assign(num_slots, -1);
}

SlotUse SlotRing::Next() {
  SlotUse use;
  use.copy = next_copy_++;
  use.slot = static_cast<int>(use.copy % num_slots());
  use.wait_for = last_reader_[use.slot];
  last_reader_[use.slot] = use.copy;
  return use;
}

}  // namespace zinf::cuda
