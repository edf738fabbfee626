// libFuzzer target: prompt file contents (JSON lines or OpenAI Batch lines, then the same bytes as
// plain text) through
// zinf::cli::ParsePrompts, and each parsed entry through RequestFor.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cmd/prompt_file.h"
#include "tests/fuzz/fuzz_support.h"

// skip_bad_lines logs each bad line; at millions of inputs a second that is only noise.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view content(reinterpret_cast<const char*>(data), size);
  for (const zinf::cli::PromptFileFormat format :
       {zinf::cli::PromptFileFormat::kJsonl, zinf::cli::PromptFileFormat::kText}) {
    for (const bool skip_bad_lines : {false, true}) {
      zinf::fuzz::ExpectZinfErrorsOnly([&] {
        {
          const zinf::cli::PromptFileOptions options{.skip_bad_lines = skip_bad_lines};
          const zinf::Request defaults;
          for (const zinf::cli::PromptEntry& entry :
               zinf::cli::ParsePrompts(content, "fuzz/prompts", format, options)) {
            zinf::fuzz::FuzzCheck(
                entry.text.has_value() + entry.ids.has_value() + entry.chat.has_value() == 1,
                "a prompt entry must hold exactly one of text, ids and a chat");
            zinf::cli::RequestFor(entry, defaults);
          }
        }
      });
    }
  }
  return 0;
}
