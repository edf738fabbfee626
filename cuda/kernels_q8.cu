// int8 weights under f32 compute, in the CPU backend's arithmetic (cpu/matmul_quant.cpp,
// cpu/q8_activations.cpp): activations quantized in blocks of 32 with one f32 scale each, the
// exact int32 sum of each block's 32 products, fma(sum, block scale, acc) over the blocks, then ×
// the row's scale. So `--gpu-compute f32` gives the CPU's int8 tokens, as it gives its f32 ones.
#include <cuda_runtime.h>

#include "cuda/kernels.h"

namespace zinf::cuda::kernels {

namespace {

constexpr int kBlock = 32;               // activation values per scale (kQ8BlockElements)
constexpr float kTinyBlockMax = 1e-30f;  // below it 127 / max would overflow: a zero block
constexpr int kLanes = 8;                // threads per (token, row), 4 elements of a block each

// One block of `width` activations (32, or an int4 group) of one token, as
// QuantizeBlockPortable does it.
__global__ void QuantizeQ8Kernel(const float* __restrict__ x, int64_t rows, int64_t cols,
                                 int64_t blocks, int width, int8_t* __restrict__ values,
                                 float* __restrict__ scales) {
  const int64_t index = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (index >= rows * blocks) return;
  const int64_t row = index / blocks, block = index % blocks;
  const float* in = x + row * cols + block * width;
  const int64_t count = min(int64_t{width}, cols - block * width);  // the rest is zero padding
  float max_abs = 0;
  bool has_nan = false;
  for (int i = 0; i < count; ++i) {
    const float a = fabsf(in[i]);
    has_nan |= isnan(a);
    max_abs = max_abs < a ? a : max_abs;
  }
  int8_t* out = values + index * width;
  if (has_nan || isinf(max_abs) || max_abs < kTinyBlockMax) {
    for (int i = 0; i < width; ++i) out[i] = 0;
    scales[index] = has_nan || isinf(max_abs) ? __int_as_float(0x7fc00000) : 0.0f;
    return;
  }
  scales[index] = __fdiv_rn(max_abs, 127.0f);
  const float inverse = __fdiv_rn(127.0f, max_abs);
  for (int i = 0; i < width; ++i) {
    float q = i < count ? rintf(__fmul_rn(in[i], inverse)) : 0.0f;
    q = q > -127.0f ? q : -127.0f;
    q = q < 127.0f ? q : 127.0f;
    out[i] = static_cast<int8_t>(q);
  }
}

// Eight threads per (token, weight row), each multiplying 4 elements of every block; the block's
// sum is gathered by integer shuffles (exact in any order), so every thread runs the same fma
// chain and the first writes it. 32 pairs per 256-thread block.
__global__ void MatMulQ8Kernel(const int8_t* __restrict__ xq, const float* __restrict__ x_scales,
                               int64_t tokens, int64_t blocks, WeightRef w,
                               float* __restrict__ out) {
  const int lane = threadIdx.x % kLanes;
  const int64_t pair = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / kLanes;
  const bool active = pair < tokens * w.rows;
  const int64_t token = active ? pair / w.rows : 0, row = active ? pair % w.rows : 0;
  const auto* weights = static_cast<const int8_t*>(w.data) + row * w.row_bytes;
  const int8_t* activations = xq + token * blocks * kBlock;
  const float* scales = x_scales + token * blocks;
  const unsigned group = 0xffu << (threadIdx.x % 32 / kLanes * kLanes);
  float acc = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    int sum = 0;
    if (active) {
      for (int j = 0; j < 4; ++j) {
        const int64_t k = b * kBlock + lane * 4 + j;
        if (k < w.cols) sum += int{activations[k]} * int{weights[k]};
      }
    }
    sum += __shfl_xor_sync(group, sum, 4, kLanes);
    sum += __shfl_xor_sync(group, sum, 2, kLanes);
    sum += __shfl_xor_sync(group, sum, 1, kLanes);
    if (active) acc = fmaf(static_cast<float>(sum), scales[b], acc);
  }
  if (active && lane == 0) {
    const float row_scale =
        reinterpret_cast<const float*>(static_cast<const char*>(w.data) + w.scales_offset)[row];
    out[token * w.rows + row] = __fmul_rn(acc, row_scale);
  }
}

}  // namespace

Status QuantizeQ8(const float* x, int64_t rows, int64_t cols, int block, int8_t* values,
                  float* scales, cudaStream_t stream) {
  const int64_t blocks = (cols + block - 1) / block;
  constexpr int kThreads = 256;
  const int64_t grid = (rows * blocks + kThreads - 1) / kThreads;
  if (grid == 0) return cudaSuccess;
  QuantizeQ8Kernel<<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(x, rows, cols, blocks,
                                                                         block, values, scales);
  return cudaGetLastError();
}

Status MatMulQ8(const int8_t* xq, const float* x_scales, int64_t tokens, const WeightRef& w,
                float* out, cudaStream_t stream) {
  const int64_t blocks = (w.cols + kBlock - 1) / kBlock;
  constexpr int kThreads = 256;
  const int64_t grid = (tokens * w.rows * kLanes + kThreads - 1) / kThreads;
  if (grid == 0) return cudaSuccess;
  MatMulQ8Kernel<<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(xq, x_scales, tokens, blocks,
                                                                       w, out);
  return cudaGetLastError();
}

}  // namespace zinf::cuda::kernels
