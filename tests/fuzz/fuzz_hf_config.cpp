// libFuzzer target: a Hugging Face config.json through ParseHfConfig (→ ModelConfig).
#include <cstddef>
#include <cstdint>
#include <string>

#include "model_formats/hf_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  zinf::fuzz::ExpectZinfErrorsOnly([&] { zinf::formats::ParseHfConfig(text, "fuzz/config.json"); });
  return 0;
}
