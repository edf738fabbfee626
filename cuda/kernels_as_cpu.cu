// RMSNorm, LayerNorm and attention in the CPU backend's operation sequence, for --gpu-compute
// f32: the same sums in the same order (double lanes by index mod 8, the CPU's lane reduction,
// keys in position order), so quantized weights, whose activation quantization turns a last-bit
// difference into a whole step, give the CPU's tokens. Slower than the parallel-reduction kernels
// (a few threads carry each ordered sum); bf16 compute keeps those.
#include "cuda/cpu_arithmetic.cuh"
#include "cuda/device_common.cuh"

namespace zinf::cuda::kernels {

namespace {

constexpr int kThreads = 128;
constexpr int kLanes = 8;

// x[row] += residual[row] (when given), visible to the whole block afterwards.
__device__ void AddResidual(float* row, const float* residual, int64_t cols) {
  if (residual == nullptr) return;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) row[c] = __fadd_rn(row[c], residual[c]);
  __syncthreads();
}

// cpu::RmsNormRow: squares summed in 8 double lanes (column mod 8), reduced, the tail added.
__global__ void RmsNormAsCpuKernel(float* x, const float* residual, int64_t cols, WeightRef weight,
                                   float eps, float* out) {
  __shared__ double lanes[kLanes];
  __shared__ float shared_scale;
  const int64_t offset = blockIdx.x * cols;
  float* row = x + offset;
  AddResidual(row, residual == nullptr ? nullptr : residual + offset, cols);
  const int64_t body = cols / kLanes * kLanes;
  if (threadIdx.x < kLanes) {
    double sum = 0.0;
    for (int64_t c = threadIdx.x; c < body; c += kLanes) {
      const double value = row[c];
      sum = __dadd_rn(sum, __dmul_rn(value, value));
    }
    lanes[threadIdx.x] = sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = ReduceLanes(lanes);
    for (int64_t c = body; c < cols; ++c) {
      const double value = row[c];
      sum = __dadd_rn(sum, __dmul_rn(value, value));
    }
    const double mean = __dadd_rn(__ddiv_rn(sum, static_cast<double>(cols)), eps);
    shared_scale = __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn(mean)));
  }
  __syncthreads();
  const float scale = shared_scale;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    out[offset + c] = __fmul_rn(__fmul_rn(row[c], scale), LoadWeight(weight, 0, c));
  }
}

// CpuBackend::LayerNorm: the mean and the centred squares each summed in double, in column order.
__global__ void LayerNormAsCpuKernel(float* x, const float* residual, int64_t cols,
                                     WeightRef weight, WeightRef bias, float eps, float* out) {
  __shared__ double shared_mean, shared_inv_std;
  const int64_t offset = blockIdx.x * cols;
  float* row = x + offset;
  AddResidual(row, residual == nullptr ? nullptr : residual + offset, cols);
  if (threadIdx.x == 0) {
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum = __dadd_rn(sum, static_cast<double>(row[c]));
    const double mean = __ddiv_rn(sum, static_cast<double>(cols));
    double squares = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double centred = __dsub_rn(row[c], mean);
      squares = __dadd_rn(squares, __dmul_rn(centred, centred));
    }
    shared_mean = mean;
    shared_inv_std =
        __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(__ddiv_rn(squares, static_cast<double>(cols)), eps)));
  }
  __syncthreads();
  const double mean = shared_mean, inv_std = shared_inv_std;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float normalised = __double2float_rn(__dmul_rn(__dsub_rn(row[c], mean), inv_std));
    out[offset + c] =
        __fadd_rn(__fmul_rn(normalised, LoadWeight(weight, 0, c)), LoadVector(bias, c));
  }
}

// A key or value element as the CPU's KvRows holds it (int8 before its scale), and the scale.
__device__ inline float StoredValue(const KvLayer& kv, const void* data, int64_t cache_row,
                                    int head, int d) {
  const int64_t at = (cache_row * kv.num_kv_heads + head) * kv.head_dim + d;
  if (kv.type == KvType::kF32) return static_cast<const float*>(data)[at];
  if (kv.type == KvType::kBF16)
    return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[at]);
  return static_cast<float>(static_cast<const int8_t*>(data)[at]);
}

__device__ inline float StoredScale(const KvLayer& kv, const float* scales, int64_t cache_row,
                                    int head) {
  return kv.type == KvType::kI8 ? scales[cache_row * kv.num_kv_heads + head] : 1.0f;
}

// cpu/attention_rows.cpp's ScoreKeys, Softmax and WeightValues for one (row, query head) per
// block: every score in shared memory (dynamic, one float per key), a thread per key scoring it,
// 8 threads summing the exponentials in the CPU's double lanes, a thread per output dimension
// accumulating the values in position order.
__global__ void __launch_bounds__(kThreads)
    AttentionAsCpuKernel(KvLayer kv, RowMap map, const float* __restrict__ q, int num_heads,
                         float scale, float* __restrict__ out) {
  extern __shared__ float scores[];
  __shared__ float query[kMaxHeadDim];
  __shared__ float scratch[32];
  __shared__ double lanes[kLanes];
  __shared__ float shared_inv_sum;
  const int row = blockIdx.x, head = blockIdx.y;
  if (map.slot[row] < 0) return;  // uniform across the block
  const int head_dim = kv.head_dim, dim_body = head_dim / kLanes * kLanes;
  const int kv_head = head / (num_heads / kv.num_kv_heads);
  const int slot = map.slot[row];
  const int num_keys = map.position[row] + 1;
  const int64_t q_offset = (static_cast<int64_t>(row) * num_heads + head) * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) query[d] = q[q_offset + d];
  __syncthreads();

  float local_max = -INFINITY;
  for (int j = threadIdx.x; j < num_keys; j += blockDim.x) {
    const int64_t cache_row = CacheRow(kv, slot, j);
    float dot[kLanes] = {};
    for (int d = 0; d < dim_body; d += kLanes) {
#pragma unroll
      for (int i = 0; i < kLanes; ++i) {
        dot[i] =
            __fmaf_rn(query[d + i], StoredValue(kv, kv.keys, cache_row, kv_head, d + i), dot[i]);
      }
    }
    float sum = ReduceLanes(dot);
    for (int d = dim_body; d < head_dim; ++d)
      sum = __fmaf_rn(query[d], StoredValue(kv, kv.keys, cache_row, kv_head, d), sum);
    scores[j] =
        __fmul_rn(__fmul_rn(sum, StoredScale(kv, kv.key_scales, cache_row, kv_head)), scale);
    local_max = fmaxf(local_max, scores[j]);
  }
  const float max_score = BlockMax(local_max, scratch);  // ends with a barrier
  for (int j = threadIdx.x; j < num_keys; j += blockDim.x)
    scores[j] = CpuExp(__fsub_rn(scores[j], max_score));
  __syncthreads();

  const int key_body = num_keys / kLanes * kLanes;
  if (threadIdx.x < kLanes) {
    double sum = 0.0;
    for (int j = threadIdx.x; j < key_body; j += kLanes) sum = __dadd_rn(sum, scores[j]);
    lanes[threadIdx.x] = sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = ReduceLanes(lanes);
    for (int j = key_body; j < num_keys; ++j) sum = __dadd_rn(sum, scores[j]);
    shared_inv_sum = __double2float_rn(__ddiv_rn(1.0, sum));
  }
  __syncthreads();
  const float inv_sum = shared_inv_sum;
  for (int j = threadIdx.x; j < num_keys; j += blockDim.x) {
    const float weight = __fmul_rn(scores[j], inv_sum);
    scores[j] = __fmul_rn(weight, StoredScale(kv, kv.value_scales, CacheRow(kv, slot, j), kv_head));
  }
  __syncthreads();

  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < num_keys; ++j) {
      acc =
          __fmaf_rn(scores[j], StoredValue(kv, kv.values, CacheRow(kv, slot, j), kv_head, d), acc);
    }
    out[q_offset + d] = acc;
  }
}

}  // namespace

Status RmsNormAsCpu(float* x, const float* residual, int64_t rows, int64_t cols,
                    const WeightRef& weight, float eps, float* out, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  RmsNormAsCpuKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, residual, cols,
                                                                           weight, eps, out);
  return cudaGetLastError();
}

Status LayerNormAsCpu(float* x, const float* residual, int64_t rows, int64_t cols,
                      const WeightRef& weight, const WeightRef& bias, float eps, float* out,
                      cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  LayerNormAsCpuKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      x, residual, cols, weight, bias, eps, out);
  return cudaGetLastError();
}

Status AttentionAsCpu(const KvLayer& kv, const RowMap& map, const float* q, int num_heads,
                      float scale, int max_keys, float* out, cudaStream_t stream) {
  if (map.rows <= 0) return cudaSuccess;
  if (kv.head_dim > kMaxHeadDim || max_keys > kMaxAttentionKeysAsCpu) return cudaErrorInvalidValue;
  const size_t score_bytes = static_cast<size_t>(max_keys) * sizeof(float);
  if (score_bytes > 48 * 1024) {
    const cudaError_t raised =
        cudaFuncSetAttribute(AttentionAsCpuKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(score_bytes));
    if (raised != cudaSuccess) return raised;
  }
  AttentionAsCpuKernel<<<dim3(map.rows, num_heads), kThreads, score_bytes, stream>>>(
      kv, map, q, num_heads, scale, out);
  return cudaGetLastError();
}

}  // namespace zinf::cuda::kernels
