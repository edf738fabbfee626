// int4 weights under f32 compute, in the CPU backend's arithmetic (cpu/matmul_q4.cpp): the
// activations quantized in blocks of the weights' group (QuantizeQ8), per group the exact int32
// sum of its nibble × int8 products, acc = fma(float(sum), scale × activation scale, acc) over
// the groups, plus the chain over the groups of fma(minimum, activation scale × Σ activations, ·).
// So `--gpu-compute f32` gives the CPU's int4 tokens.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/kernels.h"

namespace zinf::cuda::kernels {

namespace {

constexpr int kLanes = 8;  // threads per (token, row): 4 elements of each 32-block each

// Element k's nibble of a row (32-element blocks: byte j holds element j low, j + 16 high).
__device__ int Nibble(const uint8_t* row, int64_t k) {
  const uint8_t byte = row[k / 32 * 16 + k % 16];
  return k % 32 < 16 ? (byte & 0x0f) : (byte >> 4);
}

// Eight threads per (token, weight row), each summing 4 elements of each 32-block; the group sums
// are exact int32, so the shuffles may add them in any order. 32 pairs per 256-thread block.
__global__ void MatMulQ4Kernel(const int8_t* __restrict__ xq, const float* __restrict__ x_scales,
                               int64_t tokens, WeightRef w, float* __restrict__ out) {
  const int lane = threadIdx.x % kLanes;
  const int64_t pair = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / kLanes;
  const bool active = pair < tokens * w.rows;
  const int64_t token = active ? pair / w.rows : 0, row = active ? pair % w.rows : 0;
  const auto* bytes = static_cast<const uint8_t*>(w.data);
  const uint8_t* nibbles = bytes + row * w.row_bytes;
  const auto* params =
      reinterpret_cast<const __half*>(bytes + w.scales_offset) + row * w.groups * 2;
  const int8_t* activations = xq + token * w.groups * w.group_size;
  const float* scales = x_scales + token * w.groups;
  const unsigned group_mask = 0xffu << (threadIdx.x % 32 / kLanes * kLanes);
  float acc = 0, minimums = 0;
  for (int64_t g = 0; g < w.groups; ++g) {
    int sum = 0, x_sum = 0;
    if (active) {
      // This lane's 4 elements of each 32-block in the group.
      for (int64_t k = g * w.group_size + lane * 4; k < (g + 1) * w.group_size; k += 32) {
        for (int j = 0; j < 4; ++j) {
          sum += Nibble(nibbles, k + j) * activations[k + j];
          x_sum += activations[k + j];
        }
      }
    }
    // The group's product sum and Σ of its activations, exact in int32 in any order.
    for (int offset = 4; offset > 0; offset >>= 1) {
      sum += __shfl_xor_sync(group_mask, sum, offset, kLanes);
      x_sum += __shfl_xor_sync(group_mask, x_sum, offset, kLanes);
    }
    if (active) {
      const float factor = __fmul_rn(__half2float(params[2 * g]), scales[g]);
      acc = __fmaf_rn(static_cast<float>(sum), factor, acc);
      const float min_factor = __fmul_rn(scales[g], static_cast<float>(x_sum));
      minimums = fmaf(__half2float(params[2 * g + 1]), min_factor, minimums);
    }
  }
  if (active && lane == 0) out[token * w.rows + row] = __fadd_rn(acc, minimums);
}

}  // namespace

Status MatMulQ4(const int8_t* xq, const float* x_scales, int64_t tokens, const WeightRef& w,
                float* out, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t grid = (tokens * w.rows * kLanes + kThreads - 1) / kThreads;
  if (grid == 0) return cudaSuccess;
  MatMulQ4Kernel<<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(xq, x_scales, tokens, w,
                                                                       out);
  return cudaGetLastError();
}

}  // namespace zinf::cuda::kernels
