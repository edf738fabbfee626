// CudaBackend's weights: an extent uploaded at start-up and kept (converted for bf16
// compute), or copied every step into the slot ring on the copy stream, with a fence for the host
// bytes instead of a wait, and each copy timed on the device for transfer_stats().
#include "cuda/cuda_backend_impl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "cuda/cuda_check.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace kn = kernels;

void CudaBackend::UseHostMemory(std::span<const std::byte> region) {
  if (region.empty()) return;
  void* start = const_cast<std::byte*>(region.data());
  const cudaError_t status = cudaHostRegister(start, region.size(), cudaHostRegisterDefault);
  if (status != cudaSuccess) {
    cudaGetLastError();
    // Copies from pageable memory still work, staged by the driver at a lower rate.
    spdlog::warn("could not page-lock {:.1f} MiB of host memory for the GPU ({}); weight copies "
                 "from it will be slower",
                 region.size() / (1024.0 * 1024.0), cudaGetErrorString(status));
    return;
  }
  pinned_.push_back(start);
}

const std::byte* CudaBackend::LoadResident(const ExtentView& extent) {
  const std::string what = fmt::format("the weights of extent {}", extent.info->name);
  auto* base = static_cast<std::byte*>(pool_->Allocate(extent.bytes.size(), what));
  CheckCuda(cudaMemcpyAsync(base, extent.bytes.data(), extent.bytes.size(), cudaMemcpyHostToDevice,
                            stream_),
            "copying " + what + " to the GPU");
  if (compute_ == ComputeType::kBf16) ConvertF32Matrices(*extent.info, base, what);
  // The caller may reuse its staging buffer once this returns.
  CheckCuda(cudaStreamSynchronize(stream_), "copying " + what + " to the GPU");
  return base;
}

const std::byte* CudaBackend::BindExtent(const ExtentView& extent) {
  ZINF_CHECK(ring_ != nullptr, "extent {} streamed, but the placement gave it no device slots",
             extent.info->name);
  return StreamIntoSlot(extent);
}

// The copy stream fills the ring's next slot once that slot's previous reader is done; the
// compute stream waits for the copy. The host queues both and goes on: the copy of extent e + 1
// runs while the GPU still computes extent e, and nothing here waits for either.
const std::byte* CudaBackend::StreamIntoSlot(const ExtentView& extent) {
  ZINF_CHECK(!bound_.has_value(), "extent {} bound while another streamed extent is",
             extent.info->name);
  ZINF_CHECK(extent.bytes.size() <= plan_.slot_bytes,
             "extent {} of {} bytes exceeds the {}-byte slots", extent.info->name,
             extent.bytes.size(), plan_.slot_bytes);
  const SlotUse use = ring_->Next();
  Slot& slot = slots_[use.slot];
  if (use.wait_for >= 0) {
    CheckCuda(cudaStreamWaitEvent(copy_stream_, slot.read.get(), 0), "ordering a weight copy");
  }
  Copy copy = TakeSpareCopy();
  copy.bytes = extent.bytes.size();
  CheckCuda(cudaEventRecord(copy.started.get(), copy_stream_), "timing a weight copy");
  CheckCuda(cudaMemcpyAsync(slot.data, extent.bytes.data(), extent.bytes.size(),
                            cudaMemcpyHostToDevice, copy_stream_),
            fmt::format("copying the weights of extent {} to the GPU", extent.info->name));
  CheckCuda(cudaEventRecord(copy.copied.get(), copy_stream_), "ordering a weight copy");
  CheckCuda(cudaStreamWaitEvent(stream_, copy.copied.get(), 0), "ordering a weight copy");
  bound_ = use;
  bound_copied_ = copy.copied;
  copies_in_flight_.push_back(std::move(copy));
  return slot.data;
}

CopyFence CudaBackend::UnbindExtent() {
  if (!bound_.has_value()) return {};
  Slot& slot = slots_[bound_->slot];
  bound_.reset();
  // The slot is free for the copy after next once everything queued on it so far has run.
  CheckCuda(cudaEventRecord(slot.read.get(), stream_), "ordering a weight copy");
  // The host bytes must outlive the copy out of them. Rather than wait here, in the layer loop,
  // hand the weight source a fence on the copy's `copied` event: it calls it only before
  // overwriting its staging buffer, and never for a DRAM-resident extent. The event is reused for a
  // later copy only once this copy has been counted complete, so a late call may wait for that
  // later copy on the same in-order copy stream instead: longer than needed, never too short. (An
  // event per fence would be exact, at the cost of creating one per extent per step.)
  return [copied = std::exchange(bound_copied_, nullptr)] {
    CheckCuda(cudaEventSynchronize(copied.get()), "copying weights to the GPU");
  };
}

CudaBackend::Copy CudaBackend::NewCopy() {
  auto timing_event = [] {
    cudaEvent_t event = nullptr;
    CheckCuda(cudaEventCreate(&event), "creating an event");
    return SharedEvent(event, ReleaseWith<cudaEventDestroy>{});
  };
  Copy copy;
  copy.started = timing_event();
  copy.copied = timing_event();
  return copy;
}

CudaBackend::Copy CudaBackend::TakeSpareCopy() {
  // Runs dry only when steps end without a synchronisation (no logits wanted) and copies pile up.
  if (spare_copies_.empty()) return NewCopy();
  Copy copy = std::move(spare_copies_.front());
  spare_copies_.pop_front();
  return copy;
}

TransferStats CudaBackend::Timed(const Copy& copy) {
  CheckCuda(cudaEventSynchronize(copy.copied.get()), "copying weights to the GPU");
  float milliseconds = 0;
  CheckCuda(cudaEventElapsedTime(&milliseconds, copy.started.get(), copy.copied.get()),
            "timing a weight copy");
  return {copy.bytes, milliseconds / 1e3};
}

void CudaBackend::CountCompletedCopies() {
  transfer_stats_ = transfer_stats();
  for (Copy& copy : copies_in_flight_) spare_copies_.push_back(std::move(copy));
  copies_in_flight_.clear();
}

TransferStats CudaBackend::transfer_stats() const {
  TransferStats stats = transfer_stats_;
  for (const Copy& copy : copies_in_flight_) {
    const TransferStats timed = Timed(copy);
    stats.bytes += timed.bytes;
    stats.copy_seconds += timed.copy_seconds;
  }
  return stats;
}

void CudaBackend::ConvertF32Matrices(const ExtentInfo& extent, std::byte* base,
                                     const std::string& what) {
  // f32 matrices become bf16 in place (in the first half of their bytes), a scratch-sized chunk
  // at a time from the front: chunk [a, b)'s bf16 lands on f32 bytes of elements below b, all
  // copied to the scratch already, so nothing is overwritten before it is read.
  const int64_t chunk = static_cast<int64_t>(plan_.matrix_scratch_bytes / sizeof(float));
  for (const TensorInfo& tensor : extent.tensors) {
    if (tensor.dtype != DType::kF32 || tensor.shape.size() != 2) continue;
    ZINF_CHECK(chunk > 0 && matrix_buffer_ != nullptr, "no conversion scratch planned");
    std::byte* at = base + tensor.offset_in_extent;
    const int64_t count = tensor.rows() * tensor.cols();
    for (int64_t begin = 0; begin < count; begin += chunk) {
      const int64_t size = std::min(chunk, count - begin);
      CheckCuda(cudaMemcpyAsync(matrix_buffer_, at + begin * sizeof(float), size * sizeof(float),
                                cudaMemcpyDeviceToDevice, stream_),
                "staging " + what);
      CheckCuda(kn::CastF32(static_cast<const float*>(matrix_buffer_), size, kn::GemmType::kBF16,
                            at + begin * 2, stream_),
                "converting weights to bf16");
    }
    converted_.insert(at);
  }
}

}  // namespace zinf::cuda
