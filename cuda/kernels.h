// Launchers of the CUDA backend's kernels, callable from host C++ compiled without nvcc. Every
// pointer is device memory; activations are f32 rows of `cols` contiguous elements; every launcher
// enqueues on `stream` and returns without waiting (errors surface through CheckLaunch).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace zinf::cuda::kernels {

// Mirrors zinf::DType's values (checked in cuda_backend.cpp), so nvcc never sees engine headers.
enum class WeightType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kI8 = 3, kQ4 = 4 };

// A weight in device memory, in the layout of engine/quantized.h for int8/int4.
struct WeightRef {
  const void* data = nullptr;
  WeightType type = WeightType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int group_size = 0;          // int4
  int64_t row_bytes = 0;       // int8/int4: bytes of one row's values
  int64_t groups = 0;          // int4: groups per row
  uint64_t scales_offset = 0;  // int8/int4: where the scales (int4: {scale, min} pairs) start
};

// The float types a GEMM reads its operands in.
enum class GemmType : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

// How the KV cache stores values: f32 (f32 compute), bf16 (bf16 compute: half the memory, the
// planner's assumption), or int8 with a scale per (slot, position, KV head).
enum class KvType : int { kF32 = 0, kBF16 = 1, kI8 = 2 };

// One layer's KV cache: [slot][position][kv_dim] keys and values.
struct KvLayer {
  void* keys = nullptr;
  void* values = nullptr;
  float* key_scales = nullptr;  // int8 only
  float* value_scales = nullptr;
  KvType type = KvType::kF32;
  int max_context = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

// Each step row's KV slot (-1: the row belongs to no sequence and is left alone) and position,
// uploaded once per step.
struct RowMap {
  const int* slot = nullptr;
  const int* position = nullptr;
  int rows = 0;
};

// Returns the launch's error (cudaSuccess when it queued); the caller turns it into zinf::Error.
using Status = cudaError_t;

// f32 → f16/bf16 (or a copy for kF32), `count` elements.
Status CastF32(const float* in, int64_t count, GemmType to, void* out, cudaStream_t stream);
// A whole matrix of any WeightType as [rows, cols] f32/f16/bf16.
Status DequantizeMatrix(const WeightRef& w, GemmType to, void* out, cudaStream_t stream);
// int8 and int4 weights in the CPU backend's arithmetic (kernels_q8.cu, kernels_q4.cu):
// QuantizeQ8 turns [rows, cols] activations into blocks of `block` int8 values (32 for int8
// weights, the group for int4; values[rows][blocks × block]) with a scale each
// (scales[rows][blocks]); MatMulQ8 / MatMulQ4 then write out[tokens, w.rows] = x·wᵀ (no bias).
Status QuantizeQ8(const float* x, int64_t rows, int64_t cols, int block, int8_t* values,
                  float* scales, cudaStream_t stream);
Status MatMulQ8(const int8_t* xq, const float* x_scales, int64_t tokens, const WeightRef& w,
                float* out, cudaStream_t stream);
Status MatMulQ4(const int8_t* xq, const float* x_scales, int64_t tokens, const WeightRef& w,
                float* out, cudaStream_t stream);

Status Embed(const int* ids, int rows, const WeightRef& table, float* out, cudaStream_t stream);
Status AddPositionEmbedding(const int* positions, int rows, int offset, const WeightRef& table,
                            float* x, cudaStream_t stream);
Status AddBias(float* out, int64_t rows, const WeightRef& bias, cudaStream_t stream);

// residual may be null (plain norm); with it, x += residual first and x keeps the sum. out may
// alias residual. bias may have null data.
Status RmsNorm(float* x, const float* residual, int64_t rows, int64_t cols, const WeightRef& weight,
               float eps, float* out, cudaStream_t stream);
Status LayerNorm(float* x, const float* residual, int64_t rows, int64_t cols,
                 const WeightRef& weight, const WeightRef& bias, float eps, float* out,
                 cudaStream_t stream);
// The same in the CPU backend's operation sequence, bit for bit (kernels_as_cpu.cu; f32 compute).
Status RmsNormAsCpu(float* x, const float* residual, int64_t rows, int64_t cols,
                    const WeightRef& weight, float eps, float* out, cudaStream_t stream);
Status LayerNormAsCpu(float* x, const float* residual, int64_t rows, int64_t cols,
                      const WeightRef& weight, const WeightRef& bias, float eps, float* out,
                      cudaStream_t stream);

// Rotates pairs (i, i + head_dim/2) of each head by the table angles at each row's position.
Status Rope(float* x, int rows, int num_heads, int head_dim, const int* positions,
            const float* cos_table, const float* sin_table, cudaStream_t stream);

Status SiluMul(const float* gate, const float* up, float* out, int64_t count, cudaStream_t stream);
Status Relu(float* x, int64_t count, cudaStream_t stream);
Status Add(float* x, const float* y, int64_t count, cudaStream_t stream);
// `count` floats copied by the multiprocessors' own loads and stores, where `in` or `out` may be
// page-locked host memory: unlike a cudaMemcpyAsync, it does not queue behind copies on the copy
// engines.
Status CopyByKernel(const float* in, int64_t count, float* out, cudaStream_t stream);
Status GatherRows(const float* x, int64_t cols, const int* rows, int num_rows, float* out,
                  cudaStream_t stream);
// x[rows[i]] += scales[i] * src[i]; rows are distinct, so no two blocks write one row.
Status ScaleAddRows(const float* src, int64_t cols, const int* rows, const float* scales,
                    int num_rows, float* x, cudaStream_t stream);

// Writes each row's k and v (kv_dim wide) into the cache at its slot and position.
Status StoreKv(const KvLayer& kv, const RowMap& map, const float* k, const float* v,
               cudaStream_t stream);
// Causal attention of each row's query heads over its slot's keys 0..position (online softmax,
// no score matrix in memory); GQA maps query head h to KV head h / (num_heads / num_kv_heads).
Status Attention(const KvLayer& kv, const RowMap& map, const float* q, int num_heads, float scale,
                 float* out, cudaStream_t stream);
// Attention in the CPU backend's operation sequence, bit for bit (f32 compute): every row's scores
// are held in shared memory, so max_keys (the most keys any row attends to) is at most
// kMaxAttentionKeysAsCpu.
Status AttentionAsCpu(const KvLayer& kv, const RowMap& map, const float* q, int num_heads,
                      float scale, int max_keys, float* out, cudaStream_t stream);

// How many blocks of Attention's kernel one multiprocessor runs at once: with the multiprocessor
// count, how many (row, query head) walks proceed together (`zinf calibrate` times one such wave).
Status AttentionBlocksPerMultiprocessor(int* blocks);

// Largest head_dim the attention kernel takes.
inline constexpr int kMaxHeadDim = 256;
// Most keys AttentionAsCpu holds scores for: 160 KiB of shared memory, within what an A100 (and
// an H100) lets one block have.
inline constexpr int kMaxAttentionKeysAsCpu = 40960;

}  // namespace zinf::cuda::kernels
