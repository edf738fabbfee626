// Rotary position embedding, the Hugging Face rotate_half convention the converter keeps: pairs
// (i, i + head_dim/2) of each head rotated by the precomputed angle tables at the row's position.
#include "cuda/device_common.cuh"

namespace zinf::cuda::kernels {

namespace {

constexpr int kThreads = 128;

__global__ void RopeKernel(float* __restrict__ x, int num_heads, int head_dim,
                           const int* __restrict__ positions, const float* __restrict__ cos_table,
                           const float* __restrict__ sin_table) {
  const int row = blockIdx.x;
  const int half = head_dim / 2;
  const int64_t table_row = static_cast<int64_t>(positions[row]) * half;
  float* row_data = x + static_cast<int64_t>(row) * num_heads * head_dim;
  for (int item = threadIdx.x; item < num_heads * half; item += blockDim.x) {
    const int head = item / half, i = item % half;
    float* pair = row_data + static_cast<int64_t>(head) * head_dim + i;
    const float first = pair[0], second = pair[half];
    const float c = cos_table[table_row + i], s = sin_table[table_row + i];
    // Rounded like CpuBackend::Rope: two products, then their difference or sum (no fma).
    pair[0] = __fsub_rn(__fmul_rn(first, c), __fmul_rn(second, s));
    pair[half] = __fadd_rn(__fmul_rn(second, c), __fmul_rn(first, s));
  }
}

}  // namespace

Status Rope(float* x, int rows, int num_heads, int head_dim, const int* positions,
            const float* cos_table, const float* sin_table, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  RopeKernel<<<rows, kThreads, 0, stream>>>(x, num_heads, head_dim, positions, cos_table,
                                            sin_table);
  return cudaGetLastError();
}

}  // namespace zinf::cuda::kernels
