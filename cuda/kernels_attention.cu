// The KV cache writes and causal attention over it. Attention is flash-decoding style: one block
// per (row, query head) walks its slot's keys in tiles with an online softmax, so no score matrix
// reaches memory; keys are read a warp per key (coalesced), values a thread per output dimension.
#include "cuda/device_common.cuh"

namespace zinf::cuda::kernels {

namespace {

constexpr int kThreads = 128;  // 4 warps
constexpr int kKeysPerTile = 64;
constexpr int kDimsPerThread = kMaxHeadDim / kThreads;

// One (row, KV head) per block: copies f32 heads, rounds them to bf16, or quantises them
// symmetrically to int8 with the scale max|x| / 127 exactly as cpu/kv_cache.cpp does.
__global__ void StoreKvKernel(KvLayer kv, RowMap map, const float* __restrict__ k,
                              const float* __restrict__ v) {
  __shared__ float scratch[32];
  const int row = blockIdx.x, head = blockIdx.y;
  if (map.slot[row] < 0) return;
  const int kv_dim = kv.num_kv_heads * kv.head_dim;
  const int64_t cache_row = CacheRow(kv, map.slot[row], map.position[row]);
  const int64_t source =
      static_cast<int64_t>(row) * kv_dim + static_cast<int64_t>(head) * kv.head_dim;
  const int64_t target = cache_row * kv_dim + static_cast<int64_t>(head) * kv.head_dim;
  for (int part = 0; part < 2; ++part) {
    const float* in = (part == 0 ? k : v) + source;
    if (kv.type == KvType::kF32) {
      float* out = static_cast<float*>(part == 0 ? kv.keys : kv.values) + target;
      for (int d = threadIdx.x; d < kv.head_dim; d += blockDim.x) out[d] = in[d];
      continue;
    }
    if (kv.type == KvType::kBF16) {
      __nv_bfloat16* out = static_cast<__nv_bfloat16*>(part == 0 ? kv.keys : kv.values) + target;
      for (int d = threadIdx.x; d < kv.head_dim; d += blockDim.x)
        out[d] = __float2bfloat16_rn(in[d]);
      continue;
    }
    float max_abs = 0.0f;
    for (int d = threadIdx.x; d < kv.head_dim; d += blockDim.x)
      max_abs = fmaxf(max_abs, fabsf(in[d]));
    max_abs = BlockMax(max_abs, scratch);
    const float inverse = max_abs > 0.0f ? 127.0f / max_abs : 0.0f;
    int8_t* out = static_cast<int8_t*>(part == 0 ? kv.keys : kv.values) + target;
    for (int d = threadIdx.x; d < kv.head_dim; d += blockDim.x) {
      out[d] = static_cast<int8_t>(fminf(fmaxf(rintf(in[d] * inverse), -127.0f), 127.0f));
    }
    if (threadIdx.x == 0) {
      float* scales = part == 0 ? kv.key_scales : kv.value_scales;
      scales[cache_row * kv.num_kv_heads + head] = max_abs / 127.0f;
    }
  }
}

// Key or value element d of cache row `cache_row`, KV head `head`, dequantised.
__device__ inline float CacheValue(const KvLayer& kv, const void* data, const float* scales,
                                   int64_t cache_row, int head, int d) {
  const int64_t at = (cache_row * kv.num_kv_heads + head) * kv.head_dim + d;
  if (kv.type == KvType::kF32) return static_cast<const float*>(data)[at];
  if (kv.type == KvType::kBF16)
    return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[at]);
  return static_cast<float>(static_cast<const int8_t*>(data)[at]) *
         scales[cache_row * kv.num_kv_heads + head];
}

__global__ void __launch_bounds__(kThreads)
    AttentionKernel(KvLayer kv, RowMap map, const float* __restrict__ q, int num_heads, float scale,
                    float* __restrict__ out) {
  __shared__ float query[kMaxHeadDim];
  __shared__ float scores[kKeysPerTile];
  const int row = blockIdx.x, head = blockIdx.y;
  if (map.slot[row] < 0) return;  // uniform across the block: no barrier is skipped by some only
  const int head_dim = kv.head_dim;
  const int kv_head = head / (num_heads / kv.num_kv_heads);
  const int slot = map.slot[row];
  const int num_keys = map.position[row] + 1;
  const int64_t q_offset = (static_cast<int64_t>(row) * num_heads + head) * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) query[d] = q[q_offset + d];
  __syncthreads();

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  float running_max = -INFINITY, running_sum = 0.0f;
  float acc[kDimsPerThread];
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) acc[i] = 0.0f;

  for (int tile = 0; tile < num_keys; tile += kKeysPerTile) {
    const int tile_keys = min(kKeysPerTile, num_keys - tile);
    // Scores: each warp takes every warps-th key, its lanes splitting head_dim.
    for (int j = warp; j < tile_keys; j += warps) {
      const int64_t cache_row = CacheRow(kv, slot, tile + j);
      float partial = 0.0f;
      for (int d = lane; d < head_dim; d += 32) {
        partial += query[d] * CacheValue(kv, kv.keys, kv.key_scales, cache_row, kv_head, d);
      }
      partial = WarpSum(partial);
      if (lane == 0) scores[j] = partial * scale;
    }
    __syncthreads();
    // Every thread computes the same tile maximum and weights from shared memory.
    float tile_max = -INFINITY;
    for (int j = 0; j < tile_keys; ++j) tile_max = fmaxf(tile_max, scores[j]);
    const float new_max = fmaxf(running_max, tile_max);
    const float correction = expf(running_max - new_max);  // 0 on the first tile (exp(-inf))
    running_sum *= correction;
#pragma unroll
    for (int i = 0; i < kDimsPerThread; ++i) acc[i] *= correction;
    for (int j = 0; j < tile_keys; ++j) {
      const float weight = expf(scores[j] - new_max);
      running_sum += weight;
      const int64_t cache_row = CacheRow(kv, slot, tile + j);
#pragma unroll
      for (int i = 0; i < kDimsPerThread; ++i) {
        const int d = threadIdx.x + i * kThreads;
        if (d < head_dim) {
          acc[i] += weight * CacheValue(kv, kv.values, kv.value_scales, cache_row, kv_head, d);
        }
      }
    }
    running_max = new_max;
    __syncthreads();  // before the next tile overwrites scores
  }

  const float inverse_sum = 1.0f / running_sum;
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) {
    const int d = threadIdx.x + i * kThreads;
    if (d < head_dim) out[q_offset + d] = acc[i] * inverse_sum;
  }
}

}  // namespace

Status StoreKv(const KvLayer& kv, const RowMap& map, const float* k, const float* v,
               cudaStream_t stream) {
  if (map.rows <= 0) return cudaSuccess;
  StoreKvKernel<<<dim3(map.rows, kv.num_kv_heads), kThreads, 0, stream>>>(kv, map, k, v);
  return cudaGetLastError();
}

Status Attention(const KvLayer& kv, const RowMap& map, const float* q, int num_heads, float scale,
                 float* out, cudaStream_t stream) {
  if (map.rows <= 0) return cudaSuccess;
  if (kv.head_dim > kMaxHeadDim) return cudaErrorInvalidValue;
  AttentionKernel<<<dim3(map.rows, num_heads), kThreads, 0, stream>>>(kv, map, q, num_heads, scale,
                                                                      out);
  return cudaGetLastError();
}

Status AttentionBlocksPerMultiprocessor(int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, AttentionKernel, kThreads, 0);
}

}  // namespace zinf::cuda::kernels
