// Text helpers shared by the tokenizer.json components: a PCRE2 regex wrapper
// and UTF-8 utilities.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zinf::formats::hf {

// A compiled PCRE2 pattern in UTF + Unicode-property mode, JIT-compiled when
// the platform allows. Immutable after construction and safe to share between
// threads (each call makes its own match data). The constructor throws
// zinf::Error naming `what` when the pattern does not compile.
class Regex {
 public:
  enum class Syntax { kRegex, kLiteral };
  Regex(std::string_view pattern, Syntax syntax, const std::string &what);
  ~Regex();
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

  // Byte ranges [begin, end) of the non-overlapping matches in `text`, left to
  // right, as the Hugging Face library's find_iter sees them. `text` must be
  // valid UTF-8 (not re-checked).
  std::vector<std::pair<size_t, size_t>> FindAll(std::string_view text) const;
  // `text` with every match replaced by `replacement` (taken literally).
  std::string ReplaceAll(std::string_view text, std::string_view replacement) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Length in bytes of the UTF-8 sequence that starts with `lead` (1 for stray
// continuation bytes).
inline size_t Utf8Length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return 2;
  if ((lead & 0xf0) == 0xe0) return 3;
  if ((lead & 0xf8) == 0xf0) return 4;
  return 1;
}

// Decodes the code point at text[pos] (valid UTF-8 assumed) and its byte
// length.
std::pair<char32_t, size_t> DecodeUtf8(std::string_view text, size_t pos);
void AppendUtf8(char32_t code_point, std::string &out);
// Unicode White_Space, as Rust's char::is_whitespace.
bool IsWhitespace(char32_t code_point);
// Letters, numbers and '_': what an added token with single_word must not
// touch.
bool IsWordCharacter(char32_t code_point);
// Bytes to text, replacing each maximal invalid UTF-8 subpart with U+FFFD (as
// Rust's String::from_utf8_lossy and the WHATWG TextDecoder do).
std::string Utf8Lossy(std::string_view bytes);
// `text` with every occurrence of `from` replaced by `to`.
std::string ReplaceAllLiteral(std::string_view text, std::string_view from, std::string_view to);

}  // namespace zinf::formats::hf
