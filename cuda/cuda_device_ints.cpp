// CudaBackend's small device int arrays (positions, row maps, token ids): kDeviceIntsEntries
// entries each, so micro-batches taking turns within a layer find theirs already uploaded.
#include "cuda/cuda_backend_impl.h"

#include <algorithm>

#include "cuda/cuda_check.h"
#include "engine/error.h"

namespace zinf::cuda {

CudaBackend::DeviceInts CudaBackend::MakeInts(size_t capacity, const char* what) {
  DeviceInts buffer;
  buffer.capacity = capacity;
  auto* data = static_cast<int*>(
      pool_->Allocate(std::max<size_t>(capacity, 1) * sizeof(int) * kDeviceIntsEntries, what));
  buffer.entries.resize(kDeviceIntsEntries);
  for (size_t i = 0; i < buffer.entries.size(); ++i) buffer.entries[i].data = data + i * capacity;
  return buffer;
}

const int* CudaBackend::Upload(DeviceInts& buffer, std::span<const int> values, const char* what) {
  ZINF_CHECK(values.size() <= buffer.capacity, "{} {} exceed the {} planned", values.size(), what,
             buffer.capacity);
  ++buffer.uses;
  DeviceInts::Entry* oldest = &buffer.entries.front();
  for (DeviceInts::Entry& entry : buffer.entries) {
    if (entry.host.size() == values.size() &&
        std::equal(values.begin(), values.end(), entry.host.begin())) {
      entry.last_use = buffer.uses;
      return entry.data;
    }
    if (entry.last_use < oldest->last_use) oldest = &entry;
  }
  oldest->host.assign(values.begin(), values.end());
  oldest->last_use = buffer.uses;
  // Queued behind every op that read the entry before. From pageable memory the copy is staged
  // before the call returns, so `host` may change after.
  CheckCuda(cudaMemcpyAsync(oldest->data, oldest->host.data(), values.size() * sizeof(int),
                            cudaMemcpyHostToDevice, stream_),
            what);
  return oldest->data;
}

}  // namespace zinf::cuda
