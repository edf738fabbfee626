// libFuzzer target: a SentencePiece tokenizer.model through LoadSentencePieceTokenizer. The
// protobuf parser is libsentencepiece's (not instrumented); zinf's wrapper must still turn every
// failure into a zinf::Error, and encode/decode on whatever loads must not crash.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "model_formats/tokenizers/tokenizer_loader.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr std::string_view kTexts[] = {"Hello, world! 1234", "héllo 日本語 🙂", " ", ""};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zinf::fuzz::MemFile file(data, size);
  zinf::fuzz::ExpectZinfErrorsOnly([&] {
    const bool add_bos = size % 2 == 0;  // both settings, chosen by the input
    const std::unique_ptr<zinf::Tokenizer> tokenizer =
        zinf::formats::LoadSentencePieceTokenizer(file.path(), add_bos, /*add_eos=*/false);
    for (const std::string_view text : kTexts) {
      zinf::fuzz::ExpectZinfErrorsOnly([&] {
        const std::vector<zinf::TokenId> ids = tokenizer->Encode(text, /*add_special=*/true);
        tokenizer->Decode(ids);
      });
    }
    const zinf::TokenId vocab_size = tokenizer->vocab_size();
    for (const zinf::TokenId id : {0, vocab_size - 1, vocab_size, -1}) {
      const std::vector<zinf::TokenId> ids = {id};
      zinf::fuzz::ExpectZinfErrorsOnly([&] { tokenizer->Decode(ids); });
    }
  });
  return 0;
}
