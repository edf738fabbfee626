// Inputs the fuzz targets (tests/fuzz/) found crashing a parser, each now refused with a
// zinf::Error that names the file: one TEST_CASE per finding, in the order found
// (docs/reliability.md).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/error.h"
#include "model_formats/hf_config.h"
#include "model_formats/json_depth.h"
#include "model_formats/manifest_json.h"
#include "model_formats/safetensors.h"
#include "model_formats/tokenizers/hf_tokenizer.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::formats {
namespace {

using Catch::Matchers::Contains;

std::string WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

// A safetensors file whose JSON header is `header` (no data).
std::string WriteSafetensors(const std::string& path, const std::string& header) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return WriteFile(path, bytes + header);
}

// A tokenizer.json with a two-token BPE model; `vocab_b_id`, `added_id` and `cls_id` are JSON text.
std::string TokenizerJson(const std::string& vocab_b_id, const std::string& added_id = "2",
                          const std::string& cls_id = "0") {
  return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": )" + vocab_b_id +
         R"(}, "merges": []}, "added_tokens": [{"id": )" + added_id +
         R"(, "content": "<s>", "special": true}], "post_processor": {"type": )"
         R"("RobertaProcessing", "cls": ["<s>", )" +
         cls_id + R"(], "sep": ["</s>", 0]}})";
}

std::string TokenizerError(const std::string& path) {
  try {
    HfTokenizer tokenizer(path, HfTokenizerConfig{});
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("no error for " << path);
  return "";
}

// libFuzzer prints crash inputs in base64.
std::string Base64Decode(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
    count += 6;
    if (count >= 8) {
      count -= 8;
      bytes.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return bytes;
}

}  // namespace

// nlohmann throws json::out_of_range, not parse_error, for a number beyond a double's range: it
// escaped every parser's catch and ended the CLI with a message that named no file.
TEST_CASE("fuzz: a JSON number too large for a double is a malformed-JSON error",
          "[fuzz_regression]") {
  const std::string dir = testing::MakeTempDir("fuzz-number-overflow");
  CHECK_THROWS_WITH(ParseHfConfig(R"({"model_type": "llama", "hidden_size": 1e400})", "c.json"),
                    Contains("c.json") && Contains("malformed JSON"));
  CHECK_THROWS_WITH(ParseManifest(R"({"format": "zinf", "version": 1e400})", "m.json"),
                    Contains("m.json") && Contains("malformed JSON"));
  const std::string safetensors =
      WriteSafetensors(dir + "/big.safetensors", R"({"x": {"shape": [1e400]}})");
  CHECK_THROWS_WITH(SafetensorsFile(safetensors),
                    Contains("big.safetensors") && Contains("malformed header JSON"));
  const std::string tokenizer = WriteFile(dir + "/tokenizer.json", TokenizerJson("1e400"));
  CHECK_THAT(TokenizerError(tokenizer), Contains("tokenizer.json") && Contains("malformed JSON"));
}

// get<TokenId>() on 1.9e21 is a float-to-int conversion out of range (UBSan), and a negative
// added-token id indexed added_content_[-1]; huge ids made zinf allocate tables of gigabytes.
TEST_CASE("fuzz: tokenizer.json ids must be integers in [0, 2^24)", "[fuzz_regression]") {
  const std::string dir = testing::MakeTempDir("fuzz-token-ids");
  const std::string path = dir + "/tokenizer.json";
  REQUIRE_NOTHROW(HfTokenizer(WriteFile(path, TokenizerJson("1")), HfTokenizerConfig{}));
  for (const std::string bad : {"1.92234e+21", "1.5", "-1", "2147483647", "\"1\""}) {
    INFO("vocab id " << bad);
    CHECK_THAT(TokenizerError(WriteFile(path, TokenizerJson(bad))),
               Contains("tokenizer.json") && Contains("vocab token 'b' has id"));
  }
  for (const std::string bad : {"-1", "-2147483648", "4294967296", "1e10"}) {
    INFO("added id " << bad);
    CHECK_THAT(TokenizerError(WriteFile(path, TokenizerJson("1", bad))),
               Contains("added token '<s>' has id"));
    INFO("cls id " << bad);
    CHECK_THAT(TokenizerError(WriteFile(path, TokenizerJson("1", "2", bad))),
               Contains("RobertaProcessing cls token has id"));
  }
}

// Copying, dumping or walking a parsed JSON value recurses once per level: a field nested a few
// hundred thousand levels deep overflowed the stack (tokenizer.json's normalizer is copied; a
// deep safetensors shape or config field was dumped into the error message).
TEST_CASE("fuzz: JSON nested deeper than 128 levels is refused before parsing",
          "[fuzz_regression]") {
  CHECK(FindJsonNestingOver(R"({"a": [[1], {"b": "[[[[{{{{\"[["}]})", 3) == std::nullopt);
  CHECK(FindJsonNestingOver("[[[[", 3) == 3u);
  CHECK(FindJsonNestingOver(std::string(128, '[')) == std::nullopt);

  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  const std::string dir = testing::MakeTempDir("fuzz-deep-json");
  CHECK_THROWS_WITH(
      ParseHfConfig(R"({"model_type": "llama", "vocab_size": )" + deep + "}", "c.json"),
      Contains("c.json") && Contains("nested deeper than 128 levels at byte 165"));
  CHECK_THROWS_WITH(ParseManifest(R"({"format": "zinf", "config": )" + deep + "}", "m.json"),
                    Contains("m.json") && Contains("nested deeper than 128"));
  const std::string safetensors =
      WriteSafetensors(dir + "/deep.safetensors",
                       R"({"t": {"dtype": "F32", "data_offsets": [0, 0], "shape": )" + deep + "}}");
  CHECK_THROWS_WITH(SafetensorsFile(safetensors),
                    Contains("deep.safetensors") && Contains("nested deeper than 128"));
  const std::string tokenizer = WriteFile(
      dir + "/tokenizer.json",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": )" + deep + "}");
  CHECK_THAT(TokenizerError(tokenizer),
             Contains("tokenizer.json") && Contains("nested deeper than 128"));
}

TEST_CASE("fuzz: a tokenizer.model piece starting with a NUL byte is refused, not an abort",
          "[fuzz_regression]") {
  // tokenizer_model's crash input: a unigram model whose fourth piece is "\0\0\0>0>". The
  // library's trie builder throws through code that cannot pass it on, and the process aborted.
  const std::string crash = Base64Decode(
      "Cg4KBTx1bms+FQAAAAAYAgoMCgM8cz4VAAAAABgDCg0KBDwvcz4VAAAAABgDCg8KBgAAAD4wPhUAAAAAGG4=");
  const std::string path = WriteFile(testing::MakeTempDir("fuzz-spm") + "/tokenizer.model", crash);
  CHECK_THROWS_WITH(LoadSentencePieceTokenizer(path, true, false),
                    Contains(path) && Contains("piece 3 is text with a NUL byte"));
}

}  // namespace zinf::formats
