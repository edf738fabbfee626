// libFuzzer target: a Hugging Face tokenizer.json through HfTokenizer; when it loads, a few fixed
// strings are encoded and decoded, and ids at and past the vocabulary's edges are decoded.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model_formats/tokenizers/hf_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// Plain ASCII, spaces and digits (pre-tokenizer splits), multi-byte UTF-8 (byte fallback and
// byte-level mapping), and text that looks like special tokens.
constexpr std::string_view kTexts[] = {
    "Hello, world! 1234",
    "  two  spaces\tand\nnewlines ",
    "héllo 日本語 🙂",
    "<s></s><|endoftext|><unk>",
    "",
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zinf::fuzz::MemFile file(data, size);
  zinf::fuzz::ExpectZinfErrorsOnly([&] {
    const zinf::formats::HfTokenizer tokenizer(file.path(), zinf::formats::HfTokenizerConfig{});
    for (const std::string_view text : kTexts) {
      zinf::fuzz::ExpectZinfErrorsOnly([&] {
        const std::vector<zinf::TokenId> ids = tokenizer.Encode(text, /*add_special=*/true);
        tokenizer.Decode(ids);
      });
    }
    const zinf::TokenId vocab_size = tokenizer.vocab_size();
    for (const zinf::TokenId id : {0, 1, vocab_size - 1, vocab_size, -1}) {
      const std::vector<zinf::TokenId> ids = {id};
      zinf::fuzz::ExpectZinfErrorsOnly([&] { tokenizer.Decode(ids); });
    }
  });
  return 0;
}
