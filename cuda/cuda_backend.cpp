// CudaBackend: memory from the pool, ops as cuBLAS calls and kernel launches on one stream (its
// weights: cuda/cuda_weight_binding.cpp; its small int arrays: cuda/cuda_device_ints.cpp; row
// gathers and scatters: cuda/cuda_row_ops.cpp; KV cache and attention: cuda/cuda_kv_ops.cpp).
// Host-side checks mirror the CPU backend's, so bad ids or positions fail the same way on both.
#include "cuda/cuda_backend_impl.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/gemm.h"
#include "engine/error.h"
#include "engine/quantized.h"

namespace zinf::cuda {

namespace kn = kernels;

static_assert(static_cast<int>(kn::WeightType::kF32) == static_cast<int>(DType::kF32) &&
              static_cast<int>(kn::WeightType::kF16) == static_cast<int>(DType::kF16) &&
              static_cast<int>(kn::WeightType::kBF16) == static_cast<int>(DType::kBF16) &&
              static_cast<int>(kn::WeightType::kI8) == static_cast<int>(DType::kI8) &&
              static_cast<int>(kn::WeightType::kQ4) == static_cast<int>(DType::kQ4));
static_assert(sizeof(TokenId) == sizeof(int));

namespace {

// The options' placement, or every extent on the device when it names none (op tests).
Placement PlacementOrAllResident(const Checkpoint& checkpoint, const Placement& placement) {
  if (!placement.tiers.empty()) return placement;
  Placement all;
  all.backend = BackendKind::kCuda;
  all.tiers.assign(checkpoint.extents.size(), Tier::kDevice);
  return all;
}

}  // namespace

CudaBackend::CudaBackend(const Checkpoint& checkpoint, const ModelLimits& limits,
                         const CudaOptions& options)
    : plan_(CudaMemoryFor(checkpoint, limits, PlacementOrAllResident(checkpoint, options.placement),
                          options.compute, options.kv_offload)),
      compute_(options.compute),
      device_(options.device) {
  int device_count = 0;
  CheckCuda(cudaGetDeviceCount(&device_count), "looking for a GPU");
  if (options.device < 0 || options.device >= device_count) {
    Fail("--gpu {} does not exist: this machine has {} CUDA device(s)", options.device,
         device_count);
  }
  CheckCuda(cudaSetDevice(options.device), "selecting the GPU");
  if (options.kv_offload) {
    // The CPU's attention wants every core: the host thread should sleep while it waits for the
    // GPU (a step's logits, a copy fence), not spin as it does by default with one context.
    if (const cudaError_t status = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
        status != cudaSuccess) {
      cudaGetLastError();
      spdlog::warn("could not make the host thread sleep while it waits for the GPU ({}); it "
                   "will spin beside the CPU's attention",
                   cudaGetErrorString(status));
    }
  }
  cudaDeviceProp properties{};
  CheckCuda(cudaGetDeviceProperties(&properties, options.device), "reading the GPU's properties");
  name_ = fmt::format("cuda ({}, sm_{}{}, {} compute)", properties.name, properties.major,
                      properties.minor, compute_ == ComputeType::kF32 ? "f32" : "bf16");

  const uint64_t needed = plan_.total();
  if (options.gpu_mem_bytes > 0 && needed > options.gpu_mem_bytes) {
    Fail("the run needs {} but --gpu-mem allows {:.2f} GiB; lower --batch-size or --max-context, "
         "quantize the checkpoint, or use --device cpu",
         plan_.Summary(), options.gpu_mem_bytes / (1024.0 * 1024.0 * 1024.0));
  }
  spdlog::info("{}", plan_.Summary());
  pool_ = std::make_unique<DevicePool>(needed + options.extra_pool_bytes, plan_.Summary());
  CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
  stream_owner_.reset(stream_);
  CheckCublas(cublasCreate(&cublas_), "creating the cuBLAS handle");
  cublas_owner_.reset(cublas_);
  CheckCuda(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "creating a stream");
  copy_stream_owner_.reset(copy_stream_);
  CheckCublas(cublasSetStream(cublas_, stream_), "binding cuBLAS to the stream");
  constexpr uint64_t kWorkspace = 32ull << 20;
  CheckCublas(
      cublasSetWorkspace(cublas_, pool_->Allocate(kWorkspace, "the cuBLAS workspace"), kWorkspace),
      "giving cuBLAS its workspace");

  // A first launch finds a build without code for this GPU here rather than mid-step.
  float* probe = static_cast<float*>(pool_->Allocate(sizeof(float), "a probe"));
  CheckCuda(cudaMemsetAsync(probe, 0, sizeof(float), stream_), "clearing the probe");
  CheckCuda(kn::Relu(probe, 1, stream_), "a first kernel launch");
  CheckCuda(cudaStreamSynchronize(stream_), "a first kernel launch");

  cast_buffer_ = pool_->Allocate(plan_.gemm_input_bytes, "GEMM inputs");
  if (plan_.matrix_scratch_bytes > 0) {
    matrix_buffer_ = pool_->Allocate(plan_.matrix_scratch_bytes, "a matrix scratch");
  }
  if (plan_.slot_bytes > 0) {
    for (size_t e = 0; e < checkpoint.extents.size(); ++e) {
      const ExtentInfo& extent = checkpoint.extents[e];
      if (options.placement[e] == Tier::kDevice) continue;
      ++num_streamed_;
      for (const TensorInfo& tensor : extent.tensors) {
        if (compute_ == ComputeType::kBf16 && tensor.dtype == DType::kF32 &&
            tensor.shape.size() == 2) {
          Fail("extent {} would stream f32 matrices to the GPU every step, converting them to bf16 "
               "each time; convert the checkpoint with --dtype bf16 (or f16, int8, int4), or use "
               "--gpu-compute f32",
               extent.name);
        }
      }
    }
    ring_ = std::make_unique<cuda::SlotRing>(plan_.slots);
    slots_.resize(ring_->num_slots());
    for (Slot& slot : slots_) {
      slot.data =
          static_cast<std::byte*>(pool_->Allocate(plan_.slot_bytes, "a weight streaming slot"));
      cudaEvent_t read = nullptr;
      CheckCuda(cudaEventCreateWithFlags(&read, cudaEventDisableTiming), "creating an event");
      slot.read.reset(read);
    }
    // A step's copies are counted at its end, so one step's worth of events is enough.
    for (int i = 0; i < num_streamed_; ++i) spare_copies_.push_back(NewCopy());
    spdlog::info("streaming {} extents through {} device slots of {:.1f} MiB", num_streamed_,
                 slots_.size(), plan_.slot_bytes / (1024.0 * 1024.0));
  }
  const size_t rows = static_cast<size_t>(limits.max_tokens_per_step);
  token_ids_ = MakeInts(rows, "token ids");
  positions_ = MakeInts(rows, "positions");
  row_slots_ = MakeInts(rows, "row slots");
  row_positions_ = MakeInts(rows, "row positions");
  // Gathers pick the head's logit rows, and (MoE) an expert's tokens a micro-batch at a time.
  const size_t micro = static_cast<size_t>(limits.micro_rows());
  gather_rows_ =
      MakeInts(std::max<size_t>(limits.logit_rows(), checkpoint.config.is_moe() ? micro : 0),
               "gathered rows");
  if (checkpoint.config.is_moe()) {
    scatter_rows_ = MakeInts(micro, "scattered rows");
    scatter_scales_ = MakeInts(micro, "routing weights");
  }
  if (options.kv_offload) {
    // Refused here, before the DRAM cache is allocated (AllocateKvCache refuses it as well).
    if (limits.kv_dtype == DType::kF16)
      Fail("KV cache dtype f16 is not supported on CUDA; use f32 or int8");
    host_kv_ = std::make_unique<HostKvAttention>(KvShapeFor(checkpoint.config, limits),
                                                 limits.max_tokens_per_step,
                                                 checkpoint.config.q_dim(), options.host_threads);
  }
}

CudaBackend::~CudaBackend() {
  // Nothing may still read the host memory or the pool when they go.
  cudaStreamSynchronize(copy_stream_);
  cudaStreamSynchronize(stream_);
  for (const void* region : pinned_) cudaHostUnregister(const_cast<void*>(region));
}

Tensor CudaBackend::AllocateActivation(int64_t rows, int64_t cols) {
  void* data = pool_->Allocate(static_cast<uint64_t>(rows * cols) * sizeof(float), "an activation");
  return {data, rows, cols};
}

kn::WeightRef CudaBackend::Ref(const Weight& w) const {
  kn::WeightRef ref;
  ref.data = w.data;
  ref.type = static_cast<kn::WeightType>(w.dtype);
  if (w.dtype == DType::kF32 && converted_.contains(w.data)) ref.type = kn::WeightType::kBF16;
  ref.rows = w.rows;
  ref.cols = w.cols;
  ref.group_size = w.group_size;
  if (IsQuantized(w.dtype)) {
    const QuantLayout layout = LayoutOf(w.dtype, w.rows, w.cols, w.group_size);
    ref.row_bytes = layout.row_bytes();
    ref.groups = layout.groups();
    ref.scales_offset = layout.scales_offset();
  }
  return ref;
}

CudaBackend::GemmOperand CudaBackend::PrepareWeight(const Weight& w) {
  const kn::WeightRef ref = Ref(w);
  switch (ref.type) {
    case kn::WeightType::kF32: return {w.data, kn::GemmType::kF32};
    case kn::WeightType::kF16: return {w.data, kn::GemmType::kF16};
    case kn::WeightType::kBF16: return {w.data, kn::GemmType::kBF16};
    case kn::WeightType::kI8:
    case kn::WeightType::kQ4: break;
  }
  // Quantized: dequantised whole into the scratch, then an ordinary GEMM.
  const kn::GemmType type =
      compute_ == ComputeType::kF32 ? kn::GemmType::kF32 : kn::GemmType::kBF16;
  const uint64_t bytes =
      static_cast<uint64_t>(w.rows * w.cols) * (type == kn::GemmType::kF32 ? 4 : 2);
  ZINF_CHECK(matrix_buffer_ != nullptr && bytes <= plan_.matrix_scratch_bytes,
             "a {}x{} quantized matrix needs {} bytes of scratch; {} planned", w.rows, w.cols,
             bytes, plan_.matrix_scratch_bytes);
  CheckCuda(kn::DequantizeMatrix(ref, type, matrix_buffer_, stream_), "dequantizing a matrix");
  return {matrix_buffer_, type};
}

void CudaBackend::Embed(std::span<const TokenId> token_ids, const Weight& table, Tensor out) {
  CheckCuda(cudaSetDevice(device_), "selecting the GPU");
  for (const TokenId id : token_ids) {
    if (id < 0 || id >= table.rows) {
      Fail("token id {} is outside the vocabulary (0..{})", id, table.rows - 1);
    }
  }
  ZINF_CHECK(out.cols == table.cols, "embedding width {} vs {}", out.cols, table.cols);
  const int* ids = Upload(token_ids_, {token_ids.data(), token_ids.size()}, "token ids");
  CheckCuda(kn::Embed(ids, static_cast<int>(token_ids.size()), Ref(table), Floats(out), stream_),
            "embedding");
}

void CudaBackend::AddPositionEmbedding(std::span<const int> positions, int position_offset,
                                       const Weight& table, Tensor x) {
  for (const int position : positions) {
    const int64_t index = position + position_offset;
    ZINF_CHECK(index >= 0 && index < table.rows, "position {} outside the table", index);
  }
  const int* device_positions = Upload(positions_, positions, "positions");
  CheckCuda(kn::AddPositionEmbedding(device_positions, static_cast<int>(positions.size()),
                                     position_offset, Ref(table), Floats(x), stream_),
            "position embedding");
}

void CudaBackend::MatMul(Tensor x, const Weight& w, const Weight& bias, Tensor out) {
  ZINF_CHECK(x.cols == w.cols && out.cols == w.rows && x.rows == out.rows,
             "matmul shapes [{},{}] x [{},{}]ᵀ -> [{},{}]", x.rows, x.cols, w.rows, w.cols,
             out.rows, out.cols);
  const bool quantized = w.dtype == DType::kI8 || w.dtype == DType::kQ4;
  quantized&& compute_ == ComputeType::kF32 ? MatMulQuantizedAsCpu(x, w, out)
                                            : MatMulGemm(x, w, out);
  if (bias) CheckCuda(kn::AddBias(Floats(out), out.rows, Ref(bias), stream_), "bias add");
}

// f32 compute reproduces the CPU's int8 / int4 kernels, which quantize the activations too (blocks
// of 32; of the group for int4): so it gives the CPU's tokens, where a dequantized GEMM would not.
void CudaBackend::MatMulQuantizedAsCpu(Tensor x, const Weight& w, Tensor out) {
  const int64_t block = w.dtype == DType::kQ4 ? w.group_size : 32;
  const int64_t blocks = (x.cols + block - 1) / block;
  const uint64_t value_bytes = (static_cast<uint64_t>(x.rows * blocks * block) + 255) / 256 * 256;
  const uint64_t scale_bytes = static_cast<uint64_t>(x.rows * blocks) * sizeof(float);
  ZINF_CHECK(value_bytes + scale_bytes <= plan_.gemm_input_bytes,
             "quantized [{},{}] activations exceed the {} bytes planned", x.rows, x.cols,
             plan_.gemm_input_bytes);
  auto* values = static_cast<int8_t*>(cast_buffer_);
  auto* scales = reinterpret_cast<float*>(static_cast<char*>(cast_buffer_) + value_bytes);
  CheckCuda(
      kn::QuantizeQ8(Floats(x), x.rows, x.cols, static_cast<int>(block), values, scales, stream_),
      "quantizing activations for quantized weights");
  if (w.dtype == DType::kQ4) {
    CheckCuda(kn::MatMulQ4(values, scales, x.rows, Ref(w), Floats(out), stream_),
              "int4 matrix product");
  } else {
    CheckCuda(kn::MatMulQ8(values, scales, x.rows, Ref(w), Floats(out), stream_),
              "int8 matrix product");
  }
}

void CudaBackend::MatMulGemm(Tensor x, const Weight& w, Tensor out) {
  const GemmOperand weight = PrepareWeight(w);
  const void* input = x.data;
  if (weight.type != kn::GemmType::kF32) {
    ZINF_CHECK(static_cast<uint64_t>(x.rows * x.cols) * 2 <= plan_.gemm_input_bytes,
               "a [{},{}] GEMM input exceeds the {} bytes planned", x.rows, x.cols,
               plan_.gemm_input_bytes);
    CheckCuda(kn::CastF32(Floats(x), x.rows * x.cols, weight.type, cast_buffer_, stream_),
              "casting a GEMM input");
    input = cast_buffer_;
  }
  Gemm(cublas_, input, weight.data, weight.type, x.rows, x.cols, w.rows, Floats(out));
}

void CudaBackend::RmsNorm(Tensor x, const Weight& weight, float eps, Tensor out) {
  ZINF_CHECK(weight.cols == x.cols, "rmsnorm width {} vs {}", weight.cols, x.cols);
  const auto norm = compute_ == ComputeType::kF32 ? kn::RmsNormAsCpu : kn::RmsNorm;
  CheckCuda(norm(Floats(x), nullptr, x.rows, x.cols, Ref(weight), eps, Floats(out), stream_),
            "rmsnorm");
}

void CudaBackend::AddRmsNorm(Tensor x, Tensor residual, const Weight& weight, float eps,
                             Tensor out) {
  ZINF_CHECK(weight.cols == x.cols, "rmsnorm width {} vs {}", weight.cols, x.cols);
  const auto norm = compute_ == ComputeType::kF32 ? kn::RmsNormAsCpu : kn::RmsNorm;
  CheckCuda(
      norm(Floats(x), Floats(residual), x.rows, x.cols, Ref(weight), eps, Floats(out), stream_),
      "residual add and rmsnorm");
}

void CudaBackend::LayerNorm(Tensor x, const Weight& weight, const Weight& bias, float eps,
                            Tensor out) {
  ZINF_CHECK(weight.cols == x.cols, "layernorm width {} vs {}", weight.cols, x.cols);
  const auto norm = compute_ == ComputeType::kF32 ? kn::LayerNormAsCpu : kn::LayerNorm;
  CheckCuda(
      norm(Floats(x), nullptr, x.rows, x.cols, Ref(weight), Ref(bias), eps, Floats(out), stream_),
      "layernorm");
}

void CudaBackend::AddLayerNorm(Tensor x, Tensor residual, const Weight& weight, const Weight& bias,
                               float eps, Tensor out) {
  ZINF_CHECK(weight.cols == x.cols, "layernorm width {} vs {}", weight.cols, x.cols);
  const auto norm = compute_ == ComputeType::kF32 ? kn::LayerNormAsCpu : kn::LayerNorm;
  CheckCuda(norm(Floats(x), Floats(residual), x.rows, x.cols, Ref(weight), Ref(bias), eps,
                 Floats(out), stream_),
            "residual add and layernorm");
}

void CudaBackend::SetRopeTables(std::span<const float> cos, std::span<const float> sin,
                                int head_dim) {
  ZINF_CHECK(cos.size() == sin.size() && head_dim >= 2 && cos.size() % (head_dim / 2) == 0,
             "rope tables of {} and {} for head_dim {}", cos.size(), sin.size(), head_dim);
  if (rope_cos_ == nullptr) {
    rope_cos_ = static_cast<float*>(pool_->Allocate(cos.size_bytes(), "the RoPE cos table"));
    rope_sin_ = static_cast<float*>(pool_->Allocate(sin.size_bytes(), "the RoPE sin table"));
    rope_capacity_ = cos.size();
  }
  ZINF_CHECK(cos.size() <= rope_capacity_, "rope tables of {} floats exceed the {} allocated",
             cos.size(), rope_capacity_);
  CheckCuda(
      cudaMemcpyAsync(rope_cos_, cos.data(), cos.size_bytes(), cudaMemcpyHostToDevice, stream_),
      "RoPE table");
  CheckCuda(
      cudaMemcpyAsync(rope_sin_, sin.data(), sin.size_bytes(), cudaMemcpyHostToDevice, stream_),
      "RoPE table");
  CheckCuda(cudaStreamSynchronize(stream_), "RoPE table");
  rope_head_dim_ = head_dim;
  rope_positions_ = static_cast<int64_t>(cos.size()) / (head_dim / 2);
}

void CudaBackend::Rope(Tensor x, std::span<const int> positions, int num_heads) {
  ZINF_CHECK(x.cols == static_cast<int64_t>(num_heads) * rope_head_dim_, "rope width {}", x.cols);
  for (const int position : positions) {
    ZINF_CHECK(position >= 0 && position < rope_positions_, "position {} beyond the rope table",
               position);
  }
  const int* device_positions = Upload(positions_, positions, "positions");
  CheckCuda(kn::Rope(Floats(x), static_cast<int>(positions.size()), num_heads, rope_head_dim_,
                     device_positions, rope_cos_, rope_sin_, stream_),
            "rope");
}

void CudaBackend::SiluMul(Tensor gate, Tensor up, Tensor out) {
  CheckCuda(kn::SiluMul(Floats(gate), Floats(up), Floats(out), gate.rows * gate.cols, stream_),
            "silu");
}

void CudaBackend::Relu(Tensor x) {
  CheckCuda(kn::Relu(Floats(x), x.rows * x.cols, stream_), "relu");
}

void CudaBackend::Add(Tensor x, Tensor y) {
  CheckCuda(kn::Add(Floats(x), Floats(y), x.rows * x.cols, stream_), "residual add");
}

void CudaBackend::CopyToHost(Tensor x, std::span<float> host) {
  const size_t count = static_cast<size_t>(x.rows * x.cols);
  ZINF_CHECK(host.size() >= count, "host buffer too small");
  if (!results_staging_) {
    float* staging = nullptr;
    CheckCuda(
        cudaMallocHost(reinterpret_cast<void**>(&staging), kResultsStagingFloats * sizeof(float)),
        "page-locking a buffer for results on their way to the host");
    results_staging_.reset(staging);
  }
  for (size_t done = 0; done < count; done += kResultsStagingFloats) {
    const size_t chunk = std::min(kResultsStagingFloats, count - done);
    CheckCuda(cudaMemcpyAsync(results_staging_.get(), Floats(x) + done, chunk * sizeof(float),
                              cudaMemcpyDeviceToHost, stream_),
              "copying results to the host");
    // Errors of any kernel queued since the last wait surface here.
    CheckCuda(cudaStreamSynchronize(stream_), "running the step on the GPU");
    std::copy_n(results_staging_.get(), chunk, host.data() + done);
  }
  if (count == 0) CheckCuda(cudaStreamSynchronize(stream_), "running the step on the GPU");
  // Every copy queued so far fed this stream, so all have finished: their times cost no wait now.
  CountCompletedCopies();
  if (host_kv_) host_kv_->ThrowIfFailed();  // the CPU's part of the step, run as callbacks
}

void CudaBackend::CopyFromHost(std::span<const float> host, Tensor x) {
  CheckCuda(cudaSetDevice(device_), "selecting the GPU");
  ZINF_CHECK(host.size() >= static_cast<size_t>(x.rows * x.cols), "host buffer too small");
  // Pageable source: staged before the call returns, so the caller may reuse it at once.
  CheckCuda(cudaMemcpyAsync(x.data, host.data(), x.rows * x.cols * sizeof(float),
                            cudaMemcpyHostToDevice, stream_),
            "copying inputs to the GPU");
}

}  // namespace zinf::cuda
