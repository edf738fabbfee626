// libFuzzer target: chat template text (untrusted: it comes with a downloaded checkpoint) through
// zinf's Jinja engine, parsed and rendered over a small conversation with tools, under tight
// output and work limits. Anything but a zinf::Error escaping is a finding.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "model_formats/chat_template.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  zinf::fuzz::ExpectZinfErrorsOnly([&] {
    const zinf::formats::ChatTemplate chat_template(source, "fuzz",
                                                    {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    zinf::formats::ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(
        R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi ü"},
            {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
             "function": {"name": "f", "arguments": {"x": [1, 2.5, true]}}}]},
            {"role": "tool", "content": "42"}])");
    inputs.tools = nlohmann::ordered_json::parse(
        R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])");
    inputs.now = 0;
    zinf::formats::ChatRenderLimits limits;
    limits.max_output_bytes = 1 << 20;
    limits.max_loop_iterations = 1 << 16;
    chat_template.Render(inputs, limits);
  });
  return 0;
}
