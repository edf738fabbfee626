// ShippedConfigCheckpoint: LoadHfConfig + the converter's extent layout.
#include "tests/support/shipped_config.h"

#include "model_formats/canonical_tensors.h"
#include "model_formats/extent_layout.h"
#include "model_formats/hf_config.h"

namespace zinf::testing {

Checkpoint ShippedConfigCheckpoint(const std::string& name, DType dtype) {
  Checkpoint checkpoint;
  checkpoint.config =
      formats::LoadHfConfig(std::string(ZINF_SOURCE_DIR) + "/configs/" + name + ".json");
  checkpoint.dtype = dtype;
  checkpoint.extents = formats::LayoutExtents(formats::ExpectedExtents(checkpoint.config), dtype);
  return checkpoint;
}

}  // namespace zinf::testing
