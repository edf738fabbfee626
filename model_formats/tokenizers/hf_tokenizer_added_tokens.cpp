// Added-token matching: leftmost-longest search, then the
// lstrip/rstrip/single_word rules of the Rust library's
// AddedVocabulary::find_matches.
#include "model_formats/tokenizers/hf_tokenizer_added_tokens.h"

#include <algorithm>

#include <fmt/format.h>

#include "engine/error.h"
#include "model_formats/tokenizers/hf_tokenizer_bpe.h"
#include "model_formats/tokenizers/hf_tokenizer_text.h"

namespace zinf::formats::hf {
namespace {

// Start of the code point that ends just before `pos`.
size_t PreviousCodePoint(std::string_view text, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
  return start;
}

}  // namespace

std::vector<AddedToken> ParseAddedTokens(const nlohmann::json &json, const std::string &file) {
  std::vector<AddedToken> tokens;
  if (json.is_null()) return tokens;
  for (const nlohmann::json &entry : json) {
    AddedToken token;
    token.content = entry.at("content").get<std::string>();
    token.id = ParseTokenId(entry.at("id"), file, fmt::format("added token '{}'", token.content));
    token.special = entry.value("special", false);
    token.lstrip = entry.value("lstrip", false);
    token.rstrip = entry.value("rstrip", false);
    token.normalized = entry.value("normalized", !token.special);
    token.single_word = entry.value("single_word", false);
    if (token.content.empty()) Fail("tokenizer '{}': added token {} is empty", file, token.id);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens,
                                     std::vector<std::string> contents)
    : tokens_(std::move(tokens)), contents_(std::move(contents)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (contents_[i].empty()) continue;
    by_first_byte_[static_cast<uint8_t>(contents_[i][0])].push_back(static_cast<int>(i));
  }
  for (auto &bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](int a, int b) { return contents_[a].size() > contents_[b].size(); });
  }
}

std::vector<Segment> AddedTokenMatcher::Split(std::string_view text) const {
  std::vector<Segment> segments;
  size_t plain_begin = 0;  // end of the last accepted match (the Rust start_offset)
  size_t pos = 0;
  while (pos < text.size()) {
    int found = -1;
    for (const int index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      if (text.substr(pos).starts_with(contents_[index])) {
        found = index;
        break;
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    const AddedToken &token = tokens_[found];
    size_t start = pos;
    size_t stop = pos + contents_[found].size();
    pos = stop;  // the search resumes after this match even when it is discarded
    if (token.single_word) {
      const bool word_before =
          start > 0 && IsWordCharacter(DecodeUtf8(text, PreviousCodePoint(text, start)).first);
      const bool word_after = stop < text.size() && IsWordCharacter(DecodeUtf8(text, stop).first);
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      size_t new_start = start;
      while (new_start > 0) {
        const size_t previous = PreviousCodePoint(text, new_start);
        if (!IsWhitespace(DecodeUtf8(text, previous).first)) break;
        new_start = previous;
      }
      start = std::max(new_start, plain_begin);  // never into an earlier match
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        const auto [code_point, length] = DecodeUtf8(text, stop);
        if (!IsWhitespace(code_point)) break;
        stop += length;
      }
      pos = stop;
    }
    if (start > plain_begin) segments.push_back({plain_begin, start, -1});
    segments.push_back({start, stop, token.id});
    plain_begin = stop;
  }
  if (plain_begin < text.size() || segments.empty()) {
    segments.push_back({plain_begin, text.size(), -1});
  }
  return segments;
}

}  // namespace zinf::formats::hf
