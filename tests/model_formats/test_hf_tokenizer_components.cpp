// tokenizer.json components on their own: the Rust library's documented split
// behaviours, Metaspace, Digits, normalizers and decoders.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model_formats/tokenizers/hf_tokenizer_decoders.h"
#include "model_formats/tokenizers/hf_tokenizer_normalizers.h"
#include "model_formats/tokenizers/hf_tokenizer_pretokenizers.h"

namespace zinf::formats::hf {
namespace {

using Strings = std::vector<std::string>;

Strings PreTokens(const std::string &json, const std::string &input) {
  const auto pre_tokenizer = ParsePreTokenizer(nlohmann::json::parse(json), "test.json");
  std::vector<Piece> pieces = {{input, 0}};
  pre_tokenizer->PreTokenize(pieces);
  Strings texts;
  for (const Piece &piece : pieces) texts.push_back(piece.text);
  return texts;
}

std::string SplitJson(const std::string &behavior, bool invert = false) {
  return R"({"type": "Split", "pattern": {"String": "-"}, "behavior": ")" + behavior +
         R"(", "invert": )" + (invert ? "true" : "false") + "}";
}

std::string Normalize(const std::string &json, const std::string &input) {
  return ParseNormalizer(nlohmann::json::parse(json), "test.json")->Normalize(input);
}

std::string DecodeAll(const std::string &json, Strings tokens) {
  ParseDecoder(nlohmann::json::parse(json), "test.json")->DecodeChain(tokens);
  std::string text;
  for (const std::string &token : tokens) text += token;
  return text;
}

}  // namespace

TEST_CASE("Split behaviours match the Rust library's examples", "[hf_tokenizer]") {
  const std::string text = "the-final--countdown";
  CHECK(PreTokens(SplitJson("Removed"), text) == Strings{"the", "final", "countdown"});
  CHECK(PreTokens(SplitJson("Isolated"), text) ==
        Strings{"the", "-", "final", "-", "-", "countdown"});
  CHECK(PreTokens(SplitJson("MergedWithPrevious"), text) ==
        Strings{"the-", "final-", "-", "countdown"});
  CHECK(PreTokens(SplitJson("MergedWithNext"), text) ==
        Strings{"the", "-final", "-", "-countdown"});
  CHECK(PreTokens(SplitJson("Contiguous"), text) ==
        Strings{"the", "-", "final", "--", "countdown"});
  CHECK(PreTokens(SplitJson("Removed", /*invert=*/true), text) == Strings{"-", "-", "-"});
  CHECK(PreTokens(R"({"type": "WhitespaceSplit"})", " a  b\tc ") == Strings{"a", "b", "c"});
  CHECK(PreTokens(R"({"type": "Whitespace"})", "Hey man!! ok") ==
        Strings{"Hey", "man", "!!", "ok"});
}

TEST_CASE("Metaspace, Digits and ByteLevel pre-tokenizers", "[hf_tokenizer]") {
  const std::string always =
      R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                                 "split": true})";
  CHECK(PreTokens(always, "Hey friend!") == Strings{"▁Hey", "▁friend!"});
  CHECK(PreTokens(always, "") == Strings{});
  const std::string never = R"({"type": "Metaspace", "prepend_scheme": "never", "split": false})";
  CHECK(PreTokens(never, "Hey friend") == Strings{"Hey▁friend"});
  CHECK(PreTokens(R"({"type": "Digits", "individual_digits": true})", "Hey 123 friend!") ==
        Strings{"Hey ", "1", "2", "3", " friend!"});
  CHECK(PreTokens(R"({"type": "Digits", "individual_digits": false})", "Hey 123 friend!") ==
        Strings{"Hey ", "123", " friend!"});
  CHECK(PreTokens(R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})",
                  "Hello  there\n") == Strings{"ĠHello", "Ġ", "Ġthere", "Ċ"});
}

TEST_CASE("normalizers", "[hf_tokenizer]") {
  CHECK(Normalize(R"({"type": "NFD"})", "é") == "e\xCC\x81");
  CHECK(Normalize(R"({"type": "NFC"})", "e\xCC\x81") == "é");
  CHECK(Normalize(R"({"type": "NFKC"})", "ﬁ²") == "fi2");
  CHECK(Normalize(R"({"type": "Lowercase"})", "ÀB İ") == "àb i\xCC\x87");
  CHECK(Normalize(R"({"type": "Strip", "strip_left": true, "strip_right": true})", " \t a b \n") ==
        "a b");
  CHECK(Normalize(R"({"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "})",
                  "a \t\n b") == "a b");
  CHECK(Normalize(
            R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                      {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})",
            "Hey you") == "▁Hey▁you");
  CHECK(Normalize(R"({"type": "Prepend", "prepend": "▁"})", "") == "");
}

TEST_CASE("decoders", "[hf_tokenizer]") {
  CHECK(DecodeAll(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"})",
                  {"▁Hey", "▁friend!"}) == "Hey friend!");
  CHECK(DecodeAll(R"({"type": "ByteFallback"})", {"<0xE5>", "<0x8f>", "<0xab>", "a"}) == "叫a");
  CHECK(DecodeAll(R"({"type": "ByteFallback"})", {"<0xE5>", "<0x8f>", "a"}) == "\uFFFD\uFFFDa");
  CHECK(DecodeAll(R"({"type": "Strip", "content": " ", "start": 1, "stop": 1})", {"  a  "}) ==
        " a ");
  CHECK(DecodeAll(R"({"type": "ByteLevel"})", {"Hello", "Ġw", "orld", "Ċ"}) == "Hello world\n");
  // A lone continuation byte and a truncated sequence each become one U+FFFD.
  CHECK(DecodeAll(R"({"type": "ByteLevel"})", {"a", "Ģ", "ãģ"}) == "a\uFFFD\uFFFD");
}

}  // namespace zinf::formats::hf
