// OpFixture: random weights encoded like the converter does, bound on both backends.
#include "tests/cuda/op_fixture.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/error.h"
#include "engine/quantized.h"

namespace zinf::testing {

namespace {

// 256 MiB of the GPU pool for the tests' own activations.
constexpr uint64_t kTestActivationBytes = 256ull << 20;

void Encode(const std::vector<float>& values, const WeightSpec& spec, std::byte* out) {
  if (!IsQuantized(spec.dtype)) {
    ConvertFromF32(spec.dtype, values.data(), out, values.size());
    return;
  }
  const QuantLayout layout = LayoutOf(spec.dtype, spec.rows, spec.cols, spec.group_size);
  for (int64_t r = 0; r < spec.rows; ++r) {
    const float* row = values.data() + r * spec.cols;
    auto* row_values = reinterpret_cast<uint8_t*>(out) + r * layout.row_bytes();
    if (spec.dtype == DType::kI8) {
      float scale = 0;
      QuantizeRowI8(row, spec.cols, reinterpret_cast<int8_t*>(row_values), &scale);
      std::memcpy(out + layout.scales_offset() + r * 4, &scale, 4);
    } else {
      auto* params =
          reinterpret_cast<uint16_t*>(out + layout.scales_offset()) + r * layout.groups() * 2;
      QuantizeRowQ4(row, spec.cols, spec.group_size, row_values, params);
    }
  }
}

}  // namespace

ModelConfig OpTestConfig(int num_heads, int num_kv_heads, int head_dim) {
  ModelConfig config;
  config.model_type = "llama";
  config.family = Family::kLlama;
  config.vocab_size = 50;
  config.hidden_size = 160;
  config.intermediate_size = 192;
  config.num_layers = 1;
  config.num_heads = num_heads;
  config.num_kv_heads = num_kv_heads;
  config.head_dim = head_dim;
  config.max_position_embeddings = 128;
  return config;
}

OpFixture::OpFixture(const ModelConfig& config, const ModelLimits& limits,
                     std::vector<WeightSpec> weights, cuda::ComputeType compute, uint32_t seed)
    : rng_(seed) {
  checkpoint_.config = config;
  ExtentInfo extent;
  extent.name = "layer.0";
  extent.kind = ExtentKind::kLayer;
  extent.layer = 0;
  uint64_t offset = 0;
  for (const WeightSpec& spec : weights) {
    TensorInfo tensor;
    tensor.name = spec.name;
    tensor.dtype = spec.dtype;
    tensor.group_size = spec.group_size;
    tensor.shape = spec.rows == 1 && !IsQuantized(spec.dtype)
                       ? std::vector<int64_t>{spec.cols}
                       : std::vector<int64_t>{spec.rows, spec.cols};
    tensor.offset_in_extent = offset;
    tensor.size_bytes = TensorBytes(spec.dtype, spec.rows, spec.cols, spec.group_size);
    offset =
        (offset + tensor.size_bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    extent.tensors.push_back(tensor);
  }
  extent.size_bytes = offset;
  extent.padded_bytes = (offset + kExtentAlignment - 1) / kExtentAlignment * kExtentAlignment;
  extent_bytes_.assign(extent.padded_bytes, std::byte{0});
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < weights.size(); ++i) {
    std::vector<float> values(static_cast<size_t>(weights[i].rows * weights[i].cols));
    // Norm scales near 1, like trained ones; matrices and biases ~ N(0, 0.1).
    const bool norm = weights[i].name.find("norm") != std::string::npos;
    for (float& v : values) v = norm ? 1.0f + 0.1f * normal(rng_) : 0.1f * normal(rng_);
    Encode(values, weights[i], extent_bytes_.data() + extent.tensors[i].offset_in_extent);
  }
  checkpoint_.extents.push_back(extent);

  cuda::CudaOptions options;
  options.compute = compute;
  options.extra_pool_bytes = kTestActivationBytes;
  gpu_ = cuda::CreateCudaBackend(checkpoint_, limits, options);
  const KvCacheShape kv = KvShapeFor(config, limits);
  cpu_.AllocateKvCache(kv);
  gpu_->AllocateKvCache(kv);
  const ExtentView view{&checkpoint_.extents[0], extent_bytes_};
  cpu_base_ = cpu_.BindExtent(view);
  gpu_base_ = gpu_->LoadResident(view);  // resident, as the default placement has it
}

Weight OpFixture::WeightOn(const std::string& name, const std::byte* base) const {
  const TensorInfo* tensor = checkpoint_.extents[0].find(name);
  if (tensor == nullptr) Fail("op fixture: no weight '{}'", name);
  Weight weight;
  weight.data = base + tensor->offset_in_extent;
  weight.dtype = tensor->dtype;
  weight.rows = tensor->rows();
  weight.cols = tensor->cols();
  weight.group_size = tensor->group_size;
  return weight;
}

TensorPair OpFixture::Fill(int64_t rows, int64_t cols, const std::vector<float>& values) {
  TensorPair pair{cpu_.AllocateActivation(rows, cols), gpu_->AllocateActivation(rows, cols)};
  cpu_.CopyFromHost(values, pair.cpu);
  gpu_->CopyFromHost(values, pair.gpu);
  return pair;
}

TensorPair OpFixture::Random(int64_t rows, int64_t cols, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (float& v : values) v = normal(rng_);
  return Fill(rows, cols, values);
}

TensorPair OpFixture::Poisoned(int64_t rows, int64_t cols) {
  return Fill(rows, cols,
              std::vector<float>(static_cast<size_t>(rows * cols),
                                 std::numeric_limits<float>::quiet_NaN()));
}

std::vector<float> OpFixture::Read(Backend& backend, Tensor tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.rows * tensor.cols));
  backend.CopyToHost(tensor, values);
  return values;
}

double OpFixture::RelativeError(const TensorPair& pair) {
  const std::vector<float> expected = Read(cpu_, pair.cpu);
  const std::vector<float> actual = Read(*gpu_, pair.gpu);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!std::isfinite(actual[i])) return std::numeric_limits<double>::infinity();
    diff += (static_cast<double>(actual[i]) - expected[i]) *
            (static_cast<double>(actual[i]) - expected[i]);
    norm += static_cast<double>(expected[i]) * expected[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

}  // namespace zinf::testing
