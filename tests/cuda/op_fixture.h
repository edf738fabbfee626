// Runs one backend op on the CPU backend and the CUDA backend from the same random inputs and
// weights, and measures how far the GPU's output is from the CPU's: ‖gpu − cpu‖ / ‖cpu‖.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/model.h"

namespace zinf::testing {

struct WeightSpec {
  std::string name;
  DType dtype = DType::kF32;
  int64_t rows = 1;  // 1 for vectors
  int64_t cols = 0;
  int group_size = 0;  // int4
};

// The same memory on both backends.
struct TensorPair {
  Tensor cpu;
  Tensor gpu;
};

class OpFixture {
 public:
  // One extent holding `weights` (random values, encoded in each spec's dtype), bound on both
  // backends; the KV cache allocated as the Model would for config × limits.
  OpFixture(const ModelConfig& config, const ModelLimits& limits, std::vector<WeightSpec> weights,
            cuda::ComputeType compute, uint32_t seed);

  Weight CpuWeight(const std::string& name) const { return WeightOn(name, cpu_base_); }
  Weight GpuWeight(const std::string& name) const { return WeightOn(name, gpu_base_); }

  // A [rows, cols] activation on both backends holding the same random values (scale × N(0,1)).
  TensorPair Random(int64_t rows, int64_t cols, float scale = 1.0f);
  // The same, filled with NaN, so an output element nothing writes fails the comparison.
  TensorPair Poisoned(int64_t rows, int64_t cols);
  std::vector<float> Read(Backend& backend, Tensor tensor);
  // ‖gpu − cpu‖ / ‖cpu‖ over the pair; infinity when the GPU's output has a NaN or infinity.
  double RelativeError(const TensorPair& pair);

  cpu::CpuBackend& cpu() { return cpu_; }
  Backend& gpu() { return *gpu_; }
  const ModelConfig& config() const { return checkpoint_.config; }
  std::mt19937& rng() { return rng_; }

 private:
  Weight WeightOn(const std::string& name, const std::byte* base) const;
  TensorPair Fill(int64_t rows, int64_t cols, const std::vector<float>& values);

  Checkpoint checkpoint_;
  std::vector<std::byte> extent_bytes_;
  std::mt19937 rng_;
  cpu::CpuBackend cpu_{2};
  std::unique_ptr<Backend> gpu_;
  const std::byte* cpu_base_ = nullptr;
  const std::byte* gpu_base_ = nullptr;
};

// A small Llama-shaped config: vocab 50, hidden 160, FFN 192, the given attention shape.
ModelConfig OpTestConfig(int num_heads, int num_kv_heads, int head_dim);

}  // namespace zinf::testing
