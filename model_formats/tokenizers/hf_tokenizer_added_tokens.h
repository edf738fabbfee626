// tokenizer.json "added_tokens": the strings matched whole in the input before
// the model runs.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer.h"

namespace zinf::formats::hf {

struct AddedToken {
  std::string content;
  TokenId id = -1;
  bool special = false;      // only matters for skip-special decoding
  bool lstrip = false;       // the match swallows whitespace before it
  bool rstrip = false;       // the match swallows whitespace after it
  bool normalized = false;   // matched in normalized text rather than raw input
  bool single_word = false;  // matched only when no word character touches it
};

std::vector<AddedToken> ParseAddedTokens(const nlohmann::json &json, const std::string &file);

// A part of the input: either an added token (id >= 0) or plain text [begin,
// end) to tokenize.
struct Segment {
  size_t begin = 0;
  size_t end = 0;
  TokenId id = -1;
};

// Finds added tokens leftmost-longest, as the Rust library's Aho-Corasick split
// does, with the lstrip/rstrip/single_word rules. Immutable and thread-safe
// once built.
class AddedTokenMatcher {
 public:
  // `contents[i]` is the text to match for `tokens[i]` (normalized content
  // where it applies).
  AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> contents);
  bool empty() const { return tokens_.empty(); }
  // Covers all of `text` in order; plain segments may be empty only when `text`
  // is.
  std::vector<Segment> Split(std::string_view text) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> contents_;
  // Indices into tokens_ by the first byte of their content, longest content
  // first.
  std::array<std::vector<int>, 256> by_first_byte_;
};

}  // namespace zinf::formats::hf
