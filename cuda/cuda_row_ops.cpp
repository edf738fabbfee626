// CudaBackend's row gathers and scatters: the head's logit rows, and a mixture-of-experts layer's
// tokens gathered for each expert and its outputs added back, weighted, into the residual stream.
#include <cstring>

#include "cuda/cuda_backend_impl.h"
#include "cuda/cuda_check.h"
#include "engine/error.h"

namespace zinf::cuda {

namespace kn = kernels;

void CudaBackend::GatherRows(Tensor x, std::span<const int> rows, Tensor out) {
  for (const int row : rows) ZINF_CHECK(row >= 0 && row < x.rows, "row {} of {}", row, x.rows);
  const int* device_rows = Upload(gather_rows_, rows, "gathered rows");
  CheckCuda(kn::GatherRows(Floats(x), x.cols, device_rows, static_cast<int>(rows.size()),
                           Floats(out), stream_),
            "gathering rows");
}

void CudaBackend::ScaleAddRows(Tensor src, std::span<const int> rows, std::span<const float> scales,
                               Tensor x) {
  CheckScaleAddRows(src, rows, scales, x);
  const int* device_rows = Upload(scatter_rows_, rows, "scattered rows");
  // The weights travel through the same small int arrays, bit for bit.
  scale_bits_.resize(scales.size());
  std::memcpy(scale_bits_.data(), scales.data(), scales.size() * sizeof(float));
  const int* device_scales = Upload(scatter_scales_, scale_bits_, "routing weights");
  CheckCuda(kn::ScaleAddRows(Floats(src), x.cols, device_rows,
                             reinterpret_cast<const float*>(device_scales),
                             static_cast<int>(rows.size()), Floats(x), stream_),
            "adding experts' outputs");
}

}  // namespace zinf::cuda
