// Encodes one tensor, given as f32 rows in order, into its stored dtype and streams the bytes to
// the weights writer: float dtypes are converted as rows arrive; int8 / int4 rows are quantized
// as they arrive and their scales, which the layout puts after all values, are written at Finish.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/checkpoint.h"
#include "model_formats/weights_writer.h"

namespace zinf::formats {

class TensorEncoder {
 public:
  TensorEncoder(const TensorInfo& tensor, const TensorSink& sink);

  // How many rows to pass per AddRows call to keep scratch memory at a few MiB.
  int64_t rows_per_chunk() const;
  // `num_rows` × cols values; rows must arrive in order, all of them before Finish.
  void AddRows(const float* values, int64_t num_rows);
  void Finish();

 private:
  const TensorInfo& tensor_;
  const TensorSink& sink_;
  int64_t rows_done_ = 0;
  std::vector<std::byte> encoded_;  // one chunk's encoded values
  std::vector<std::byte> scales_;   // all rows' scales (int8) or group parameters (int4)
};

}  // namespace zinf::formats
