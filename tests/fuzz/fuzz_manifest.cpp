// libFuzzer target: a zinf checkpoint's manifest.json through the checks LoadCheckpoint applies
// before trusting any offset: ParseManifest, ValidateModelConfig, ValidateExtents.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/model_config.h"
#include "model_formats/extent_layout.h"
#include "model_formats/manifest_json.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  zinf::fuzz::ExpectZinfErrorsOnly([&] {
    const std::string where = "fuzz/manifest.json";
    const zinf::Checkpoint checkpoint = zinf::formats::ParseManifest(text, where);
    zinf::ValidateModelConfig(checkpoint.config);
    zinf::formats::ValidateExtents(checkpoint.extents, checkpoint.config, checkpoint.dtype, where);
  });
  return 0;
}
