// What a decode step's kernels cost on this GPU beyond moving bytes and multiplying, measured with
// the backend's own launches for `zinf calibrate`: a layer's launches at sizes too small to matter,
// the attention walk per key (one multiprocessor's worth and a full wave of walks), and the
// dequantisation of int8 / int4 matrices to bf16 that precedes their GEMMs.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "cuda/device_timing.h"
#include "cuda/gemm.h"
#include "cuda/kernels.h"
#include "engine/dtype.h"
#include "engine/planner/planner.h"
#include "engine/quantized.h"

namespace zinf::cuda {

namespace kn = kernels;

namespace {

constexpr int kRuns = 5;

// A dense layer's decode launches under bf16 compute: seven projections, each an input cast and a
// cuBLAS GEMM, and about one element-wise kernel per projection (norms, RoPE, the KV store, the
// attention, SiLU, the residual adds), at 256 wide.
double LayerLaunchSeconds() {
  constexpr int kWidth = 256, kLayers = 50, kProjections = 7;
  static_assert(3 * kProjections == kLaunchesPerLayer, "the planner divides by this count");
  const DeviceBuffer x = AllocateDevice(kWidth * sizeof(float), "allocating a launch-timing row");
  const DeviceBuffer out = AllocateDevice(kWidth * sizeof(float), "allocating a launch-timing row");
  const DeviceBuffer cast = AllocateDevice(kWidth * 2, "allocating a launch-timing row");
  const DeviceBuffer w = AllocateDevice(kWidth * kWidth * 2, "allocating a launch-timing matrix");
  CheckCuda(cudaMemset(x.get(), 0x3c, kWidth * sizeof(float)), "filling a launch-timing row");
  CheckCuda(cudaMemset(w.get(), 0x3c, kWidth * kWidth * 2), "filling a launch-timing matrix");
  const CublasHandle handle = MakeCublas();
  auto* xf = static_cast<float*>(x.get());
  auto* of = static_cast<float*>(out.get());
  const double seconds = FastestSeconds(kRuns, [&] {
    for (int layer = 0; layer < kLayers; ++layer) {
      for (int projection = 0; projection < kProjections; ++projection) {
        CheckCuda(kn::CastF32(xf, kWidth, kn::GemmType::kBF16, cast.get(), nullptr),
                  "timing launches");
        Gemm(handle.get(), cast.get(), w.get(), kn::GemmType::kBF16, 1, kWidth, kWidth, of);
        CheckCuda(kn::Add(of, xf, kWidth, nullptr), "timing launches");  // x stays finite
      }
    }
  });
  return seconds / kLayers;
}

struct AttentionCosts {
  double lone_key_seconds = 0;  // walks on a few multiprocessors only
  double wave_key_seconds = 0;  // a full wave of walks
  int wave_blocks = 0;
};

// Decode attention over an f32 cache of 1024 positions, 32 query heads on 8 KV heads of 128.
AttentionCosts MeasureAttention(int device) {
  constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128, kKeys = 1024;
  int per_multiprocessor = 0, multiprocessors = 0;
  CheckCuda(kn::AttentionBlocksPerMultiprocessor(&per_multiprocessor),
            "querying the attention kernel's occupancy");
  CheckCuda(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
            "querying the multiprocessor count");
  AttentionCosts costs;
  // As many rows as fill one wave with whole rows of kHeads walks: the wave timed below.
  const int max_rows = std::max(per_multiprocessor * multiprocessors / kHeads, 1);
  costs.wave_blocks = max_rows * kHeads;
  const uint64_t kv_dim = kKvHeads * kHeadDim;
  const uint64_t cache_bytes = static_cast<uint64_t>(max_rows) * kKeys * kv_dim * sizeof(float);
  const DeviceBuffer keys = AllocateDevice(cache_bytes, "allocating a KV cache to time attention");
  const DeviceBuffer values =
      AllocateDevice(cache_bytes, "allocating a KV cache to time attention");
  const uint64_t q_bytes = static_cast<uint64_t>(max_rows) * kHeads * kHeadDim * sizeof(float);
  const DeviceBuffer q = AllocateDevice(q_bytes, "allocating queries to time attention");
  const DeviceBuffer out = AllocateDevice(q_bytes, "allocating queries to time attention");
  CheckCuda(cudaMemset(keys.get(), 0x3c, cache_bytes), "filling a KV cache");
  CheckCuda(cudaMemset(values.get(), 0x3f, cache_bytes), "filling a KV cache");
  CheckCuda(cudaMemset(q.get(), 0x3c, q_bytes), "filling queries");
  std::vector<int> slots(max_rows), positions(max_rows, kKeys - 1);
  for (int row = 0; row < max_rows; ++row) slots[row] = row;
  const DeviceBuffer map = AllocateDevice(2 * max_rows * sizeof(int), "allocating a row map");
  auto* map_ints = static_cast<int*>(map.get());
  CheckCuda(cudaMemcpy(map_ints, slots.data(), max_rows * sizeof(int), cudaMemcpyHostToDevice),
            "uploading a row map");
  CheckCuda(cudaMemcpy(map_ints + max_rows, positions.data(), max_rows * sizeof(int),
                       cudaMemcpyHostToDevice),
            "uploading a row map");
  kn::KvLayer kv;
  kv.keys = keys.get();
  kv.values = values.get();
  kv.type = kn::KvType::kF32;
  kv.max_context = kKeys;
  kv.num_kv_heads = kKvHeads;
  kv.head_dim = kHeadDim;
  const auto attend = [&](int first_row, int rows) {
    const kn::RowMap row_map{map_ints + first_row, map_ints + max_rows + first_row, rows};
    CheckCuda(kn::Attention(kv, row_map, static_cast<const float*>(q.get()), kHeads, 0.088f,
                            static_cast<float*>(out.get()), nullptr),
              "timing attention");
  };
  // One row is 32 walks: a few multiprocessors' worth, each walk alone on its own. Each run takes
  // the next slot, whose 8 MB the cache's later slots have pushed out of the L2 cache, as a
  // decode step finds its layer's cache (timed on one slot, the walks ran 3x as fast as decode
  // steps showed on an H100, 2026-11-27).
  int next_slot = 0;
  costs.lone_key_seconds =
      FastestSeconds(kRuns, [&] { attend(next_slot++ % max_rows, 1); }) / kKeys;
  costs.wave_key_seconds = FastestSeconds(kRuns, [&] { attend(0, max_rows); }) / kKeys;
  return costs;
}

// Seconds per weight of dequantising a 4096 × 8192 matrix to bf16, each run another of several
// copies, so that the stored matrix comes from device memory (as a model's do), not the L2 cache.
double DequantSeconds(DType dtype) {
  constexpr int64_t kRows = 4096, kCols = 8192;
  constexpr int kGroup = 64, kCopies = 6;
  const QuantLayout layout = LayoutOf(dtype, kRows, kCols, kGroup);
  const uint64_t stride = layout.total_bytes();
  const DeviceBuffer data =
      AllocateDevice(kCopies * stride, "allocating matrices to time dequantisation");
  // 0x11: small non-zero values, scales and minimums (zeros can run faster than real data).
  CheckCuda(cudaMemset(data.get(), 0x11, kCopies * stride), "filling matrices");
  const DeviceBuffer out =
      AllocateDevice(kRows * kCols * 2, "allocating a matrix to time dequantisation");
  kn::WeightRef ref;
  ref.type = dtype == DType::kQ4 ? kn::WeightType::kQ4 : kn::WeightType::kI8;
  ref.rows = kRows;
  ref.cols = kCols;
  ref.group_size = kGroup;
  ref.row_bytes = layout.row_bytes();
  ref.groups = layout.groups();
  ref.scales_offset = layout.scales_offset();
  int next_copy = 0;
  const double seconds = FastestSeconds(kRuns, [&] {
    ref.data = static_cast<const char*>(data.get()) + (next_copy++ % kCopies) * stride;
    CheckCuda(kn::DequantizeMatrix(ref, kn::GemmType::kBF16, out.get(), nullptr),
              "timing dequantisation");
  });
  return seconds / static_cast<double>(kRows * kCols);
}

}  // namespace

void MeasureKernelCosts(int device, Bandwidths& rates) {
  CheckCuda(cudaSetDevice(device), "selecting the GPU");
  rates.gpu_layer_launch_seconds = LayerLaunchSeconds();
  const AttentionCosts attention = MeasureAttention(device);
  rates.gpu_attention_lone_key_seconds = attention.lone_key_seconds;
  rates.gpu_attention_key_seconds = attention.wave_key_seconds;
  rates.gpu_attention_wave_blocks = attention.wave_blocks;
  rates.gpu_dequant_i8_seconds = DequantSeconds(DType::kI8);
  rates.gpu_dequant_q4_seconds = DequantSeconds(DType::kQ4);
}

}  // namespace zinf::cuda
