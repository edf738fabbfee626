// TieredWeightSource: resident extents loaded once, streamed extents cycled through staging buffers.
#include "io/tiered_weight_source.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "engine/error.h"

namespace zinf::io {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string FormatMiB(uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

TieredWeightSource::TieredWeightSource(const Checkpoint& checkpoint,
                                       std::vector<WeightPlacement> placements,
                                       const TieredOptions& options)
    : weights_file_(checkpoint.weights_file),
      extents_(checkpoint.extents),
      prefetch_depth_(options.prefetch_depth) {
  ZINF_CHECK(placements.size() == extents_.size(), "{} placements for {} extents",
             placements.size(), extents_.size());
  if (prefetch_depth_ < 0) Fail("prefetch depth must be 0 or more, got {}", prefetch_depth_);
  ValidateExtents();

  states_.resize(extents_.size());
  uint64_t staging_bytes = 0;
  for (size_t idx = 0; idx < extents_.size(); ++idx) {
    states_[idx].placement = placements[idx];
    if (placements[idx] == WeightPlacement::kResident) {
      states_[idx].resident_idx = static_cast<int>(resident_buffers_.size());
      // At least one page, so even an empty extent has a registrable buffer.
      resident_buffers_.emplace_back(std::max(extents_[idx].padded_bytes, kBufferAlignment),
                                     options.resident_lock);
    } else {
      staging_bytes = std::max(staging_bytes, extents_[idx].padded_bytes);
    }
  }
  const bool any_streamed =
      std::count(placements.begin(), placements.end(), WeightPlacement::kStreamed) > 0;
  if (any_streamed) {
    // Depth d keeps d reads in flight while the forward pass computes on one more extent (and
    // a device copies out of copy_buffers more).
    if (options.copy_buffers < 0)
      Fail("copy buffers must be 0 or more, got {}", options.copy_buffers);
    const int num_slots = prefetch_depth_ + 1 + options.copy_buffers;
    for (int slot_idx = 0; slot_idx < num_slots; ++slot_idx) {
      staging_buffers_.emplace_back(std::max(staging_bytes, kBufferAlignment),
                                    options.staging_lock);
      slots_.push_back({static_cast<int>(resident_buffers_.size()) + slot_idx, -1, {}});
      free_slots_.push_back(slot_idx);
    }
  }

  std::vector<std::span<std::byte>> buffers;  // resident first, then staging: Slot::buffer_idx
  for (const AlignedBuffer& buffer : resident_buffers_) buffers.push_back(buffer.span());
  for (const AlignedBuffer& buffer : staging_buffers_) buffers.push_back(buffer.span());
  reader_ = std::make_unique<ExtentReader>(weights_file_, std::move(buffers), options.reader);
  if (!slots_.empty()) {
    verifier_ = std::make_unique<ExtentVerifier>(*reader_, static_cast<int>(slots_.size()));
  }
  CheckFileLength();
  LoadResident();
}

TieredWeightSource::~TieredWeightSource() {
  // A device may still be copying out of a released buffer: let it finish before the buffer goes.
  for (Slot& slot : slots_) {
    if (!slot.fence) continue;
    try {
      slot.fence();
    } catch (...) {  // a destructor must not throw
      // The device failed; the backend reports its error. Nothing is left to wait for.
    }
  }
}

void TieredWeightSource::ValidateExtents() const {
  for (const ExtentInfo& extent : extents_) {
    const uint64_t end = extent.offset + extent.padded_bytes;
    if (extent.offset % kExtentAlignment != 0 || extent.padded_bytes % kExtentAlignment != 0 ||
        extent.size_bytes > extent.padded_bytes || end < extent.offset) {
      Fail("{} of {} has a bad layout (offset {}, {} bytes, padded to {}): offsets and padded "
           "sizes must be multiples of {}; convert the checkpoint again",
           DescribeExtent(extent), weights_file_, extent.offset, extent.size_bytes,
           extent.padded_bytes, kExtentAlignment);
    }
  }
}

void TieredWeightSource::CheckFileLength() const {
  for (const ExtentInfo& extent : extents_) {
    const uint64_t end = extent.offset + extent.size_bytes;
    if (end > reader_->file_size_bytes()) {
      Fail("weights file {} is truncated: it is {} bytes but {} ends at byte {}; copy or convert "
           "it again",
           weights_file_, reader_->file_size_bytes(), DescribeExtent(extent), end);
    }
  }
}

void TieredWeightSource::LoadResident() {
  // Submit everything first: the reader keeps its queue depth of chunks in flight across extents.
  std::vector<std::pair<int, ReadTicket>> pending;
  for (size_t idx = 0; idx < extents_.size(); ++idx) {
    const int resident_idx = states_[idx].resident_idx;
    if (resident_idx < 0) continue;
    pending.emplace_back(static_cast<int>(idx), reader_->Submit(extents_[idx], resident_idx));
  }
  for (const auto& [extent_idx, ticket] : pending) {
    reader_->WaitFor(ticket);
    ++extents_read_;
    const int resident_idx = states_[extent_idx].resident_idx;
    checksum_seconds_ +=
        CheckExtentBytes(extents_[extent_idx], resident_buffers_[resident_idx].data(), *reader_);
  }
}

void TieredWeightSource::Prefetch(int extent_idx) {
  ZINF_CHECK(extent_idx >= 0 && static_cast<size_t>(extent_idx) < extents_.size(),
             "prefetch of extent {} out of range ({} extents)", extent_idx, extents_.size());
  const ExtentState& state = states_[extent_idx];
  if (state.placement == WeightPlacement::kResident || prefetch_depth_ == 0) return;
  if (state.slot_idx >= 0 || free_slots_.empty()) return;  // staged already, or no room: a hint
  StartRead(extent_idx, TakeFreeSlot());
}

ExtentView TieredWeightSource::Acquire(int extent_idx) {
  ZINF_CHECK(extent_idx >= 0 && static_cast<size_t>(extent_idx) < extents_.size(),
             "acquire of extent {} out of range ({} extents)", extent_idx, extents_.size());
  ExtentState& state = states_[extent_idx];
  ZINF_CHECK(!state.acquired, "{} acquired twice without Release",
             DescribeExtent(extents_[extent_idx]));
  if (state.placement == WeightPlacement::kResident) {
    state.acquired = true;
    return MakeView(extent_idx, resident_buffers_[state.resident_idx].data());
  }

  if (state.slot_idx < 0) StartRead(extent_idx, TakeSlotForAcquire(extent_idx));
  const int slot_idx = state.slot_idx;
  if (verifier_->Pending(slot_idx)) {
    const Clock::time_point wait_start = Clock::now();
    try {
      verifier_->Wait(slot_idx);
    } catch (const Error&) {
      read_wait_seconds_ += SecondsSince(wait_start);
      FreeSlot(slot_idx);  // nothing valid in it; a later Acquire reads again
      throw;
    }
    read_wait_seconds_ += SecondsSince(wait_start);
    ++extents_read_;
  }
  state.acquired = true;
  return MakeView(extent_idx, staging_buffers_[slot_idx].data());
}

void TieredWeightSource::Release(int extent_idx, CopyFence fence) {
  ZINF_CHECK(extent_idx >= 0 && static_cast<size_t>(extent_idx) < extents_.size(),
             "release of extent {} out of range ({} extents)", extent_idx, extents_.size());
  ExtentState& state = states_[extent_idx];
  ZINF_CHECK(state.acquired, "{} released without being acquired",
             DescribeExtent(extents_[extent_idx]));
  state.acquired = false;
  // A resident extent's bytes are never overwritten, so its fence is dropped: a model served from
  // DRAM never waits on the device in its layer loop. A staging buffer keeps it until reused.
  if (state.placement == WeightPlacement::kStreamed) {
    const int slot_idx = state.slot_idx;
    FreeSlot(slot_idx);
    slots_[slot_idx].fence = std::move(fence);
  }
}

int TieredWeightSource::prefetch_depth() const { return slots_.empty() ? 0 : prefetch_depth_; }

WeightIoStats TieredWeightSource::stats() const {
  WeightIoStats stats;
  stats.bytes_read = reader_->bytes_read();
  stats.extents_read = extents_read_;
  stats.read_wait_seconds = read_wait_seconds_;
  stats.checksum_seconds = checksum_seconds_ + (verifier_ ? verifier_->checksum_seconds() : 0);
  stats.read_busy_seconds = reader_->busy_seconds();
  return stats;
}

uint64_t TieredWeightSource::resident_bytes() const {
  uint64_t total = 0;
  for (const AlignedBuffer& buffer : resident_buffers_) total += buffer.size_bytes();
  return total;
}

std::string TieredWeightSource::Describe() const {
  const size_t num_streamed = static_cast<size_t>(
      std::count_if(states_.begin(), states_.end(), [](const ExtentState& state) {
        return state.placement == WeightPlacement::kStreamed;
      }));
  std::string streamed = "nothing streamed";
  if (num_streamed > 0) {
    streamed = fmt::format("streamed {} extents through {} x {} buffers", num_streamed,
                           slots_.size(), FormatMiB(staging_buffers_.front().size_bytes()));
  }
  return fmt::format("{}, {}, {}; {} resident ({})", streamed,
                     reader_->direct_io() ? "O_DIRECT" : "buffered", reader_->DescribeBackend(),
                     resident_buffers_.size(), FormatMiB(resident_bytes()));
}

void TieredWeightSource::StartRead(int extent_idx, int slot_idx) {
  Slot& slot = slots_[slot_idx];
  ZINF_CHECK(slot.extent_idx < 0 && !verifier_->Pending(slot_idx) && !slot.fence,
             "staging buffer {} is not free", slot_idx);
  const ReadTicket ticket = reader_->Submit(extents_[extent_idx], slot.buffer_idx);
  verifier_->Enqueue(slot_idx, ticket, extents_[extent_idx], staging_buffers_[slot_idx].data());
  slot.extent_idx = extent_idx;
  states_[extent_idx].slot_idx = slot_idx;
}

int TieredWeightSource::TakeFreeSlot() {
  const int slot_idx = free_slots_.front();
  Slot& slot = slots_[slot_idx];
  // The last extent in this buffer may still be copied to a device: the one wait for it, as late
  // as possible. Cleared only once it returns, so a throwing fence leaves the buffer free but
  // guarded.
  if (slot.fence) {
    slot.fence();
    slot.fence = nullptr;
  }
  free_slots_.pop_front();
  return slot_idx;
}

int TieredWeightSource::TakeSlotForAcquire(int extent_idx) {
  if (!free_slots_.empty()) return TakeFreeSlot();
  // Every buffer holds an extent. Take back the one prefetched furthest ahead that is not acquired:
  // the forward pass needs it last. Its read must finish before the buffer is reused.
  int victim = -1;
  for (int slot_idx = 0; slot_idx < static_cast<int>(slots_.size()); ++slot_idx) {
    const int held = slots_[slot_idx].extent_idx;
    if (held < 0 || states_[held].acquired) continue;
    if (victim < 0 || held > slots_[victim].extent_idx) victim = slot_idx;
  }
  ZINF_CHECK(victim >= 0,
             "cannot acquire {}: all {} staging buffers are acquired; Release one first",
             DescribeExtent(extents_[extent_idx]), slots_.size());
  Slot& slot = slots_[victim];
  if (verifier_->Pending(victim)) {
    try {
      verifier_->Wait(victim);
    } catch (const Error&) {
      // The discarded read's error resurfaces if that extent is acquired (and read) again.
    }
  }
  states_[slot.extent_idx].slot_idx = -1;
  slot.extent_idx = -1;
  return victim;
}

void TieredWeightSource::FreeSlot(int slot_idx) {
  Slot& slot = slots_[slot_idx];
  ZINF_CHECK(!verifier_->Pending(slot_idx), "freeing staging buffer {} with a read in flight",
             slot_idx);
  if (slot.extent_idx >= 0) states_[slot.extent_idx].slot_idx = -1;
  slot.extent_idx = -1;
  free_slots_.push_back(slot_idx);
}

ExtentView TieredWeightSource::MakeView(int extent_idx, const std::byte* data) const {
  const ExtentInfo& extent = extents_[extent_idx];
  return ExtentView{&extent, std::span<const std::byte>(data, extent.size_bytes)};
}

std::vector<std::span<const std::byte>> TieredWeightSource::HostMemory() const {
  std::vector<std::span<const std::byte>> regions;
  for (const AlignedBuffer& buffer : resident_buffers_) {
    if (!buffer.empty()) regions.emplace_back(buffer.data(), buffer.size_bytes());
  }
  for (const AlignedBuffer& buffer : staging_buffers_) {
    if (!buffer.empty()) regions.emplace_back(buffer.data(), buffer.size_bytes());
  }
  return regions;
}

}  // namespace zinf::io
