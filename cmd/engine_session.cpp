// EngineSession: the plan, then the weight source, backend and model it implies.
#include "cmd/engine_session.h"

#include <spdlog/spdlog.h>

#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "engine/error.h"
#include "engine/layer_parts.h"
#include "io/weight_source_factory.h"

namespace zinf::cli {

EngineSession::EngineSession(const Checkpoint& checkpoint, const SessionOptions& options) {
  const bool on_cuda = options.device.device == BackendKind::kCuda;
  if (on_cuda) {
    if (const std::string reason = cuda::CudaUnavailableReason(); !reason.empty()) {
      Fail("--device cuda: {}; run with --device cpu", reason);
    }
  }
  planned_ = PlanSession(checkpoint, options);
  if (!planned_.batch_choice.empty()) spdlog::info("{}", planned_.batch_choice);
  const Plan& plan = planned_.plan;
  spdlog::info("{}", plan.Summary());
  if (plan.placement.staging_buffers > 0 && HasWholeLayers(checkpoint)) {
    spdlog::info("{} was converted before tensors had their own checksums, so each streamed layer "
                 "is read whole; `zinf verify {} --add-tensor-checksums` adds them, and each layer "
                 "is then read in two parts, with staging buffers the size of the larger and the "
                 "memory saved kept resident",
                 checkpoint.directory, checkpoint.directory);
  }
  io::WeightSourceOptions io_options;
  io_options.fault_hook = options.fault_hook;
  if (on_cuda) {
    cuda::CudaOptions cuda_options;
    cuda_options.device = options.device.gpu;
    cuda_options.compute = options.device.gpu_compute;
    cuda_options.gpu_mem_bytes = planned_.inputs.gpu_mem_bytes;
    cuda_options.placement = plan.placement;
    cuda_options.kv_offload = options.device.kv_offload;
    cuda_options.host_threads = options.cpu_threads();
    backend_ = cuda::CreateCudaBackend(checkpoint, planned_.limits, cuda_options);
    if (plan.placement.host_computes_experts) {
      host_experts_ = std::make_unique<cpu::CpuBackend>(options.cpu_threads());
    }
    weights_ = io::OpenWeightSource(checkpoint, plan.placement, io_options);
    for (const std::span<const std::byte> region : weights_->HostMemory()) {
      backend_->UseHostMemory(region);
    }
  } else {
    weights_ = io::OpenWeightSource(checkpoint, plan.placement, io_options);
    backend_ = std::make_unique<cpu::CpuBackend>(options.cpu_threads());
  }
  model_ = std::make_unique<Model>(checkpoint, *backend_, *weights_, planned_.limits,
                                   plan.placement, host_experts_.get());
}

}  // namespace zinf::cli
