// Device-side helpers shared by the kernels: reading one weight element of any stored type, and
// block-wide reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernels.h"

namespace zinf::cuda::kernels {

// Element (row, col) of a weight, dequantised to f32 exactly as engine/quantized.cpp does.
__device__ inline float LoadWeight(const WeightRef& w, int64_t row, int64_t col) {
  const auto* bytes = static_cast<const uint8_t*>(w.data);
  switch (w.type) {
    case WeightType::kF32: return static_cast<const float*>(w.data)[row * w.cols + col];
    case WeightType::kF16:
      return __half2float(static_cast<const __half*>(w.data)[row * w.cols + col]);
    case WeightType::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(w.data)[row * w.cols + col]);
    case WeightType::kI8: {
      const float scale = reinterpret_cast<const float*>(bytes + w.scales_offset)[row];
      return static_cast<float>(static_cast<int8_t>(bytes[row * w.row_bytes + col])) * scale;
    }
    case WeightType::kQ4: {
      // 32-element blocks: byte j holds element j (low nibble) and element j + 16 (high nibble).
      const int64_t block = col / 32, in_block = col % 32;
      const uint8_t byte = bytes[row * w.row_bytes + block * 16 + (in_block % 16)];
      const int nibble = in_block < 16 ? (byte & 0x0f) : (byte >> 4);
      const auto* params = reinterpret_cast<const __half*>(bytes + w.scales_offset) +
                           (row * w.groups + col / w.group_size) * 2;
      return fmaf(static_cast<float>(nibble), __half2float(params[0]), __half2float(params[1]));
    }
  }
  return 0.0f;
}

// The KV cache row of a slot's position.
__device__ inline int64_t CacheRow(const KvLayer& kv, int slot, int position) {
  return static_cast<int64_t>(slot) * kv.max_context + position;
}

// A vector weight (norm scale or bias), element i; 0 when the weight is absent.
__device__ inline float LoadVector(const WeightRef& w, int64_t i) {
  return w.data == nullptr ? 0.0f : LoadWeight(w, 0, i);
}

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename Op>
__device__ inline float WarpReduce(float value, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

__device__ inline float WarpSum(float value) { return WarpReduce(value, SumOp{}); }

// `op` over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` holds 32 floats of shared memory; the call ends with a barrier, so it can be reused.
template <typename Op>
__device__ inline float BlockReduce(float value, float identity, Op op, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = WarpReduce(value, op);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / 32;
  float result = WarpReduce(lane < warps ? scratch[lane] : identity, op);
  __syncthreads();
  return result;
}

__device__ inline float BlockSum(float value, float* scratch) {
  return BlockReduce(value, 0.0f, SumOp{}, scratch);
}
__device__ inline float BlockMax(float value, float* scratch) {
  return BlockReduce(value, -INFINITY, MaxOp{}, scratch);
}

// Blocks for `count` elements at `threads` per block, capped so the grid stays legal.
inline unsigned GridFor(int64_t count, int threads) {
  const int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 64 ? (blocks > 0 ? blocks : 1) : 65535 * 64);
}

}  // namespace zinf::cuda::kernels
