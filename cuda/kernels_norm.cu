// RMSNorm and LayerNorm, optionally fused with the residual add before them: one block per row,
// f32 statistics. With a residual the row is read once for the sum and once for the output,
// instead of the three passes an add kernel then a norm kernel would make.
#include "cuda/device_common.cuh"

namespace zinf::cuda::kernels {

namespace {

constexpr int kThreads = 256;

// x[row] (+= residual[row]) and the row's sum of squares (RMS) or sum (LayerNorm mean pass).
template <bool kSquares>
__device__ float AccumulateRow(float* x, const float* residual, int64_t cols) {
  float partial = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float value = x[c];
    if (residual != nullptr) {
      value += residual[c];
      x[c] = value;
    }
    partial += kSquares ? value * value : value;
  }
  return partial;
}

__global__ void RmsNormKernel(float* x, const float* residual, int64_t cols, WeightRef weight,
                              float eps, float* out) {
  __shared__ float scratch[32];
  const int64_t offset = blockIdx.x * cols;
  float* row = x + offset;
  const float sum_squares = BlockSum(
      AccumulateRow<true>(row, residual == nullptr ? nullptr : residual + offset, cols), scratch);
  const float scale = rsqrtf(sum_squares / static_cast<float>(cols) + eps);
  // BlockSum ends with a barrier: every thread's x writes are visible before out (which may alias
  // residual) is written.
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    out[offset + c] = row[c] * scale * LoadWeight(weight, 0, c);
  }
}

__global__ void LayerNormKernel(float* x, const float* residual, int64_t cols, WeightRef weight,
                                WeightRef bias, float eps, float* out) {
  __shared__ float scratch[32];
  const int64_t offset = blockIdx.x * cols;
  float* row = x + offset;
  const float mean =
      BlockSum(AccumulateRow<false>(row, residual == nullptr ? nullptr : residual + offset, cols),
               scratch) /
      static_cast<float>(cols);
  float partial = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float centred = row[c] - mean;
    partial += centred * centred;
  }
  const float inv_std = rsqrtf(BlockSum(partial, scratch) / static_cast<float>(cols) + eps);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    out[offset + c] = (row[c] - mean) * inv_std * LoadWeight(weight, 0, c) + LoadVector(bias, c);
  }
}

}  // namespace

Status RmsNorm(float* x, const float* residual, int64_t rows, int64_t cols, const WeightRef& weight,
               float eps, float* out, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  RmsNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, residual, cols, weight,
                                                                      eps, out);
  return cudaGetLastError();
}

Status LayerNorm(float* x, const float* residual, int64_t rows, int64_t cols,
                 const WeightRef& weight, const WeightRef& bias, float eps, float* out,
                 cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  LayerNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, residual, cols, weight,
                                                                        bias, eps, out);
  return cudaGetLastError();
}

}  // namespace zinf::cuda::kernels
