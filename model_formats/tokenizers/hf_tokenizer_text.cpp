// PCRE2 regex wrapper and UTF-8 helpers for the tokenizer.json components.
#include "model_formats/tokenizers/hf_tokenizer_text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>

#include "engine/error.h"

namespace zinf::formats::hf {

struct Regex::Impl {
  pcre2_code *code = nullptr;
  bool jit = false;
};

Regex::Regex(std::string_view pattern, Syntax syntax, const std::string &what)
    : impl_(std::make_unique<Impl>()) {
  // UCP makes \s, \w, \d and case-insensitivity Unicode-aware, as in the Rust
  // library's Onig. PCRE2 rejects UCP together with LITERAL, and a literal
  // needs no character classes anyway.
  const uint32_t options =
      syntax == Syntax::kLiteral ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP;
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                              &error_code, &error_offset, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    Fail("{}: cannot compile regex '{}' at offset {}: {}", what, pattern, error_offset,
         reinterpret_cast<const char *>(message));
  }
  // JIT is an optimisation only: without it (unsupported CPU, no executable
  // memory) the interpreter gives the same matches.
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(impl_->code); }

std::vector<std::pair<size_t, size_t>> Regex::FindAll(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  pcre2_match_data *data = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset <= text.size()) {
    // Callers validate the whole input once; re-checking here would rescan it
    // on every call.
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), offset,
                                                PCRE2_NO_UTF_CHECK, data, nullptr)
                              : pcre2_match(impl_->code, subject, text.size(), offset,
                                            PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(data);
      Fail("regex match failed with PCRE2 error {}", rc);
    }
    const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    matches.emplace_back(begin, end);
    if (end > begin) {
      offset = end;
    } else {  // an empty match: step over one character so the scan moves on
      if (end >= text.size()) break;
      offset = end + Utf8Length(static_cast<unsigned char>(text[end]));
    }
  }
  pcre2_match_data_free(data);
  return matches;
}

std::string Regex::ReplaceAll(std::string_view text, std::string_view replacement) const {
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (const auto &[begin, end] : FindAll(text)) {
    out.append(text.substr(previous, begin - previous));
    out.append(replacement);
    previous = end;
  }
  out.append(text.substr(previous));
  return out;
}

std::pair<char32_t, size_t> DecodeUtf8(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const size_t length = std::min(Utf8Length(lead), text.size() - pos);
  if (length == 1) return {lead, 1};
  // Payload bits of the lead byte for 2-, 3- and 4-byte sequences.
  char32_t code_point = lead & (length == 2 ? 0x1f : length == 3 ? 0x0f : 0x07);
  for (size_t i = 1; i < length; ++i) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3f);
  }
  return {code_point, length};
}

void AppendUtf8(char32_t code_point, std::string &out) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t length =
      utf8proc_encode_char(static_cast<utf8proc_int32_t>(code_point), buffer);
  out.append(reinterpret_cast<const char *>(buffer), static_cast<size_t>(length));
}

bool IsWhitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

bool IsWordCharacter(char32_t c) {
  if (c == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return true;
    default: return false;
  }
}

std::string Utf8Lossy(std::string_view bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[pos]);
    if (lead < 0x80) {
      out.push_back(static_cast<char>(lead));
      ++pos;
      continue;
    }
    // Continuation count and the allowed range of the second byte (WHATWG
    // "UTF-8 decode"), which excludes overlong forms, surrogates and code
    // points above U+10FFFF.
    size_t needed = 0;
    unsigned char lower = 0x80;
    unsigned char upper = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
      needed = 1;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      needed = 2;
      if (lead == 0xe0) lower = 0xa0;
      if (lead == 0xed) upper = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      needed = 3;
      if (lead == 0xf0) lower = 0x90;
      if (lead == 0xf4) upper = 0x8f;
    } else {
      out.append(kReplacement);
      ++pos;
      continue;
    }
    size_t next = pos + 1;
    bool complete = true;
    for (size_t i = 0; i < needed; ++i, ++next) {
      if (next >= bytes.size()) {
        complete = false;
        break;
      }
      const auto byte = static_cast<unsigned char>(bytes[next]);
      if (byte < lower || byte > upper) {
        complete = false;
        break;
      }
      lower = 0x80;
      upper = 0xbf;
    }
    if (complete) {
      out.append(bytes.substr(pos, next - pos));
    } else {
      out.append(kReplacement);  // the offending byte (at `next`) starts the
                                 // next attempt
    }
    pos = next;
  }
  return out;
}

std::string ReplaceAllLiteral(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (size_t found = text.find(from); found != std::string_view::npos;
       found = text.find(from, previous)) {
    out.append(text.substr(previous, found - previous));
    out.append(to);
    previous = found + from.size();
  }
  out.append(text.substr(previous));
  return out;
}

}  // namespace zinf::formats::hf
