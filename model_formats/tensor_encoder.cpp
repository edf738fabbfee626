// TensorEncoder: row-wise conversion and quantization into the layouts of engine/quantized.h.
#include "model_formats/tensor_encoder.h"

#include <algorithm>
#include <cstring>

#include "engine/error.h"
#include "engine/quantized.h"

namespace zinf::formats {

namespace {

constexpr int64_t kChunkElements = int64_t{1} << 20;

}  // namespace

TensorEncoder::TensorEncoder(const TensorInfo& tensor, const TensorSink& sink)
    : tensor_(tensor), sink_(sink) {
  if (IsQuantized(tensor.dtype)) {
    const QuantLayout layout =
        LayoutOf(tensor.dtype, tensor.rows(), tensor.cols(), tensor.group_size);
    scales_.reserve(static_cast<size_t>(layout.total_bytes() - layout.scales_offset()));
  }
}

int64_t TensorEncoder::rows_per_chunk() const {
  return std::max<int64_t>(1, kChunkElements / tensor_.cols());
}

void TensorEncoder::AddRows(const float* values, int64_t num_rows) {
  ZINF_CHECK(rows_done_ + num_rows <= tensor_.rows(), "tensor {}: {} rows past its {}",
             tensor_.name, rows_done_ + num_rows, tensor_.rows());
  const int64_t cols = tensor_.cols();
  rows_done_ += num_rows;
  if (!IsQuantized(tensor_.dtype)) {
    encoded_.resize(static_cast<size_t>(num_rows * cols) * DTypeSize(tensor_.dtype));
    ConvertFromF32(tensor_.dtype, values, encoded_.data(), static_cast<size_t>(num_rows * cols));
    sink_(encoded_);
    return;
  }
  const QuantLayout layout = LayoutOf(tensor_.dtype, tensor_.rows(), cols, tensor_.group_size);
  encoded_.resize(static_cast<size_t>(num_rows * layout.row_bytes()));
  std::vector<uint16_t> params(static_cast<size_t>(layout.groups() * 2));
  for (int64_t r = 0; r < num_rows; ++r) {
    std::byte* row_values = encoded_.data() + r * layout.row_bytes();
    if (tensor_.dtype == DType::kI8) {
      float scale;
      QuantizeRowI8(values + r * cols, cols, reinterpret_cast<int8_t*>(row_values), &scale);
      const auto* scale_bytes = reinterpret_cast<const std::byte*>(&scale);
      scales_.insert(scales_.end(), scale_bytes, scale_bytes + 4);
    } else {
      QuantizeRowQ4(values + r * cols, cols, tensor_.group_size,
                    reinterpret_cast<uint8_t*>(row_values), params.data());
      const auto* param_bytes = reinterpret_cast<const std::byte*>(params.data());
      scales_.insert(scales_.end(), param_bytes, param_bytes + params.size() * 2);
    }
  }
  sink_(encoded_);
}

void TensorEncoder::Finish() {
  ZINF_CHECK(rows_done_ == tensor_.rows(), "tensor {}: {} of {} rows written", tensor_.name,
             rows_done_, tensor_.rows());
  if (!IsQuantized(tensor_.dtype)) return;
  const QuantLayout layout =
      LayoutOf(tensor_.dtype, tensor_.rows(), tensor_.cols(), tensor_.group_size);
  const uint64_t values_bytes = static_cast<uint64_t>(layout.rows * layout.row_bytes());
  const std::vector<std::byte> padding(layout.scales_offset() - values_bytes);
  sink_(padding);
  sink_(scales_);
}

}  // namespace zinf::formats
