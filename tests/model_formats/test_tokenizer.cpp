// SentencePiece tokenizer against the golden ids, decoding, continuation text and UTF-8 checks.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/tokenizer.h"
#include "model_formats/tokenizers/tokenizer_loader.h"

namespace zinf::formats {
namespace {

using Catch::Matchers::Contains;

const std::string kStoriesDir = std::string(ZINF_SOURCE_DIR) + "/models/stories260K";

std::unique_ptr<Tokenizer> StoriesTokenizer() {
  return LoadSentencePieceTokenizer(kStoriesDir + "/tokenizer.model", /*add_bos=*/true,
                                    /*add_eos=*/false);
}

struct GoldenLine {
  std::string prompt;
  std::vector<TokenId> ids;  // BOS included
};

std::vector<GoldenLine> ReadGolden() {
  std::ifstream in(kStoriesDir + "/golden/tokenize.jsonl");
  REQUIRE(in);
  std::vector<GoldenLine> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json json = nlohmann::json::parse(line);
    lines.push_back({json.at("prompt").get<std::string>(),
                     json.at("sentencepiece_ids").get<std::vector<TokenId>>()});
  }
  return lines;
}

}  // namespace

TEST_CASE("SentencePiece encode matches the golden ids for every prompt", "[tokenizer]") {
  const auto tokenizer = StoriesTokenizer();
  CHECK(tokenizer->vocab_size() == 512);
  CHECK(tokenizer->bos_id() == 1);
  CHECK(tokenizer->eos_id() == 2);
  const std::vector<GoldenLine> golden = ReadGolden();
  REQUIRE(golden.size() == 8);
  for (const GoldenLine& line : golden) {
    INFO("prompt: " << line.prompt);
    CHECK(tokenizer->Encode(line.prompt, /*add_special=*/true) == line.ids);
    const std::vector<TokenId> plain = tokenizer->Encode(line.prompt, /*add_special=*/false);
    CHECK(plain == std::vector<TokenId>(line.ids.begin() + 1, line.ids.end()));
  }
}

TEST_CASE("SentencePiece decode roundtrips text", "[tokenizer]") {
  const auto tokenizer = StoriesTokenizer();
  for (const std::string text : {"Once upon a time", "Lily and Ben went to the park.",
                                 "café naïve 日本", "Hello\nworld", "On 12/25/2023 at 10:30!"}) {
    CHECK(tokenizer->Decode(tokenizer->Encode(text, true)) == text);
  }
  CHECK(tokenizer->Decode(std::vector<TokenId>{1, 403, 407, 261, 378}) == "Once upon a time");
  CHECK(tokenizer->Decode(std::vector<TokenId>{}) == "");
  CHECK_THROWS_WITH(tokenizer->Decode(std::vector<TokenId>{403, 512}),
                    Contains("512") && Contains("outside the vocabulary"));
  CHECK_THROWS_AS(tokenizer->Decode(std::vector<TokenId>{-1}), Error);

  const auto with_eos = LoadSentencePieceTokenizer(kStoriesDir + "/tokenizer.model", false, true);
  CHECK(with_eos->Encode("Once upon a time", true) == std::vector<TokenId>{403, 407, 261, 378, 2});
  CHECK_THROWS_WITH(LoadSentencePieceTokenizer("/nonexistent/tokenizer.model", true, false),
                    Contains("/nonexistent/tokenizer.model"));
}

TEST_CASE("DecodeContinuation keeps the leading space a suffix decode drops", "[tokenizer]") {
  const auto tokenizer = StoriesTokenizer();
  const std::vector<TokenId> context = tokenizer->Encode("Once upon a", true);
  const std::vector<TokenId> time = {378};  // "▁time"
  CHECK(tokenizer->Decode(time) == "time");
  CHECK(DecodeContinuation(*tokenizer, context, time) == " time");
  CHECK(DecodeContinuation(*tokenizer, {}, time) == "time");
  CHECK(DecodeContinuation(*tokenizer, context, {}) == "");

  // Decoding a sequence one token at a time, as generation streams it, gives the whole decode.
  for (const GoldenLine& line : ReadGolden()) {
    std::string streamed;
    for (size_t i = 1; i < line.ids.size(); ++i) {
      const std::span<const TokenId> all(line.ids);
      streamed += DecodeContinuation(*tokenizer, all.first(i), all.subspan(i, 1));
    }
    // Byte-fallback tokens (ids 3..258) stream as partial characters, decoded as U+FFFD.
    const bool has_byte_tokens = std::any_of(line.ids.begin(), line.ids.end(),
                                             [](TokenId id) { return id >= 3 && id <= 258; });
    if (!has_byte_tokens) CHECK(streamed == tokenizer->Decode(line.ids));
  }
}

TEST_CASE("FindInvalidUtf8 is strict", "[tokenizer]") {
  CHECK(FindInvalidUtf8("") == -1);
  CHECK(FindInvalidUtf8("plain ascii\n") == -1);
  CHECK(FindInvalidUtf8("café naïve 日本 🙂") == -1);
  CHECK(FindInvalidUtf8("\xEF\xBF\xBF") == -1);      // U+FFFF
  CHECK(FindInvalidUtf8("\xF4\x8F\xBF\xBF") == -1);  // U+10FFFF, the largest
  CHECK(FindInvalidUtf8("\x80") == 0);               // lone continuation byte
  CHECK(FindInvalidUtf8("ab\xFF") == 2);
  CHECK(FindInvalidUtf8("\xC0\xAF") == 0);          // overlong '/'
  CHECK(FindInvalidUtf8("a\xE0\x80\xAF") == 1);     // overlong, 3 bytes
  CHECK(FindInvalidUtf8("\xF0\x80\x80\xAF") == 0);  // overlong, 4 bytes
  CHECK(FindInvalidUtf8("x\xED\xA0\x80") == 1);     // surrogate U+D800
  CHECK(FindInvalidUtf8("\xF4\x90\x80\x80") == 0);  // U+110000
  CHECK(FindInvalidUtf8("ab\xE6\x97") == 2);        // truncated at the end
  CHECK(FindInvalidUtf8("\xE6\x97x") == 0);         // truncated by an ASCII byte
  CHECK(FindInvalidUtf8(std::string_view("a\0b", 3)) == -1);
}

TEST_CASE("LoadCheckpointTokenizer", "[tokenizer]") {
  Checkpoint checkpoint;
  checkpoint.directory = kStoriesDir;
  CHECK_THROWS_WITH(LoadCheckpointTokenizer(checkpoint),
                    Contains(kStoriesDir) && Contains("no tokenizer"));
  checkpoint.tokenizer = TokenizerSpec{"hf-json", "tokenizer.json", true, false};
  CHECK_THROWS_WITH(LoadCheckpointTokenizer(checkpoint), Contains("hf-json"));
  checkpoint.tokenizer = TokenizerSpec{"sentencepiece", "missing.model", true, false};
  CHECK_THROWS_WITH(LoadCheckpointTokenizer(checkpoint), Contains("missing.model"));
  checkpoint.tokenizer = TokenizerSpec{"sentencepiece", "tokenizer.model", true, false};
  const auto tokenizer = LoadCheckpointTokenizer(checkpoint);
  CHECK(tokenizer->Encode("Once upon a time", true) == std::vector<TokenId>{1, 403, 407, 261, 378});
}

}  // namespace zinf::formats
