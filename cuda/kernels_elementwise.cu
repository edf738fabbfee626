// Element-wise kernels: type casts and dequantisation for the GEMMs, embeddings, bias, activations,
// residual adds and row gathers. Memory-bound; grid-stride loops over the elements.
#include "cuda/cpu_arithmetic.cuh"
#include "cuda/device_common.cuh"

namespace zinf::cuda::kernels {

namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ inline T FromFloat(float value);
template <>
__device__ inline float FromFloat<float>(float value) {
  return value;
}
template <>
__device__ inline __half FromFloat<__half>(float value) {
  return __float2half_rn(value);
}
template <>
__device__ inline __nv_bfloat16 FromFloat<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}

template <typename T>
__global__ void CastKernel(const float* __restrict__ in, int64_t count, T* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = FromFloat<T>(in[i]);
  }
}

template <typename T>
__global__ void DequantizeKernel(WeightRef w, T* __restrict__ out) {
  const int64_t count = w.rows * w.cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = FromFloat<T>(LoadWeight(w, i / w.cols, i % w.cols));
  }
}

__global__ void EmbedKernel(const int* __restrict__ ids, WeightRef table, float* __restrict__ out) {
  const int row = blockIdx.x;
  const int64_t id = ids[row];
  for (int64_t c = threadIdx.x; c < table.cols; c += blockDim.x) {
    out[row * table.cols + c] = LoadWeight(table, id, c);
  }
}

__global__ void AddPositionKernel(const int* __restrict__ positions, int offset, WeightRef table,
                                  float* __restrict__ x) {
  const int row = blockIdx.x;
  const int64_t index = positions[row] + offset;
  for (int64_t c = threadIdx.x; c < table.cols; c += blockDim.x) {
    x[row * table.cols + c] += LoadWeight(table, index, c);
  }
}

__global__ void AddBiasKernel(float* __restrict__ out, int64_t rows, WeightRef bias) {
  const int64_t count = rows * bias.cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] += LoadWeight(bias, 0, i % bias.cols);
  }
}

__global__ void SiluMulKernel(const float* gate, const float* up, float* out, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    // cpu/silu.cpp's sequence and exp, so f32 compute gives the CPU's bits.
    const float g = gate[i];
    out[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, CpuExp(-g))), up[i]);
  }
}

__global__ void ReluKernel(float* x, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] = x[i] > 0.0f ? x[i] : 0.0f;
  }
}

__global__ void AddKernel(float* x, const float* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] += y[i];
  }
}

__global__ void CopyKernel(const float* __restrict__ in, int64_t count, float* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void GatherKernel(const float* __restrict__ x, int64_t cols,
                             const int* __restrict__ rows, float* __restrict__ out) {
  const int64_t source = rows[blockIdx.x];
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    out[blockIdx.x * cols + c] = x[source * cols + c];
  }
}

__global__ void ScaleAddRowsKernel(const float* __restrict__ src, int64_t cols,
                                   const int* __restrict__ rows, const float* __restrict__ scales,
                                   float* __restrict__ x) {
  const int64_t target = rows[blockIdx.x];
  const float scale = scales[blockIdx.x];
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    // A product, then a sum, as CpuBackend::ScaleAddRows rounds them (no fma).
    x[target * cols + c] =
        __fadd_rn(x[target * cols + c], __fmul_rn(scale, src[blockIdx.x * cols + c]));
  }
}

}  // namespace

Status CastF32(const float* in, int64_t count, GemmType to, void* out, cudaStream_t stream) {
  const unsigned grid = GridFor(count, kThreads);
  switch (to) {
    case GemmType::kF32:
      return cudaMemcpyAsync(out, in, count * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    case GemmType::kF16:
      CastKernel<<<grid, kThreads, 0, stream>>>(in, count, static_cast<__half*>(out));
      break;
    case GemmType::kBF16:
      CastKernel<<<grid, kThreads, 0, stream>>>(in, count, static_cast<__nv_bfloat16*>(out));
      break;
  }
  return cudaGetLastError();
}

Status DequantizeMatrix(const WeightRef& w, GemmType to, void* out, cudaStream_t stream) {
  const unsigned grid = GridFor(w.rows * w.cols, kThreads);
  switch (to) {
    case GemmType::kF32:
      DequantizeKernel<<<grid, kThreads, 0, stream>>>(w, static_cast<float*>(out));
      break;
    case GemmType::kF16:
      DequantizeKernel<<<grid, kThreads, 0, stream>>>(w, static_cast<__half*>(out));
      break;
    case GemmType::kBF16:
      DequantizeKernel<<<grid, kThreads, 0, stream>>>(w, static_cast<__nv_bfloat16*>(out));
      break;
  }
  return cudaGetLastError();
}

Status Embed(const int* ids, int rows, const WeightRef& table, float* out, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;  // a zero-block grid is a launch error
  EmbedKernel<<<rows, kThreads, 0, stream>>>(ids, table, out);
  return cudaGetLastError();
}

Status AddPositionEmbedding(const int* positions, int rows, int offset, const WeightRef& table,
                            float* x, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  AddPositionKernel<<<rows, kThreads, 0, stream>>>(positions, offset, table, x);
  return cudaGetLastError();
}

Status AddBias(float* out, int64_t rows, const WeightRef& bias, cudaStream_t stream) {
  AddBiasKernel<<<GridFor(rows * bias.cols, kThreads), kThreads, 0, stream>>>(out, rows, bias);
  return cudaGetLastError();
}

Status SiluMul(const float* gate, const float* up, float* out, int64_t count, cudaStream_t stream) {
  SiluMulKernel<<<GridFor(count, kThreads), kThreads, 0, stream>>>(gate, up, out, count);
  return cudaGetLastError();
}

Status Relu(float* x, int64_t count, cudaStream_t stream) {
  ReluKernel<<<GridFor(count, kThreads), kThreads, 0, stream>>>(x, count);
  return cudaGetLastError();
}

Status Add(float* x, const float* y, int64_t count, cudaStream_t stream) {
  AddKernel<<<GridFor(count, kThreads), kThreads, 0, stream>>>(x, y, count);
  return cudaGetLastError();
}

Status CopyByKernel(const float* in, int64_t count, float* out, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  CopyKernel<<<GridFor(count, kThreads), kThreads, 0, stream>>>(in, count, out);
  return cudaGetLastError();
}

Status GatherRows(const float* x, int64_t cols, const int* rows, int num_rows, float* out,
                  cudaStream_t stream) {
  if (num_rows <= 0) return cudaSuccess;
  GatherKernel<<<num_rows, kThreads, 0, stream>>>(x, cols, rows, out);
  return cudaGetLastError();
}

Status ScaleAddRows(const float* src, int64_t cols, const int* rows, const float* scales,
                    int num_rows, float* x, cudaStream_t stream) {
  if (num_rows <= 0) return cudaSuccess;
  ScaleAddRowsKernel<<<num_rows, kThreads, 0, stream>>>(src, cols, rows, scales, x);
  return cudaGetLastError();
}

}  // namespace zinf::cuda::kernels
