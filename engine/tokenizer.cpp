// Tokenizer helpers shared by every tokenizer: continuation decoding and strict UTF-8 checking.
#include "engine/tokenizer.h"

#include <algorithm>

namespace zinf {

namespace {
// Enough tokens of context for the decoder to see the word boundary before `ids`; more would only
// cost decode time.
constexpr size_t kContinuationPrefixTokens = 6;
}  // namespace

std::string DecodeContinuation(const Tokenizer& tokenizer, std::span<const TokenId> context,
                               std::span<const TokenId> ids) {
  if (ids.empty()) return "";
  const size_t prefix_size = std::min(context.size(), kContinuationPrefixTokens);
  if (prefix_size == 0) return tokenizer.Decode(ids);
  const std::span<const TokenId> prefix = context.subspan(context.size() - prefix_size);
  std::vector<TokenId> joined(prefix.begin(), prefix.end());
  joined.insert(joined.end(), ids.begin(), ids.end());
  const std::string text = tokenizer.Decode(joined);
  const std::string base = tokenizer.Decode(prefix);
  if (text.starts_with(base)) return text.substr(base.size());
  // The prefix decodes differently once followed by `ids` (e.g. byte-fallback tokens completing a
  // character): fall back to decoding `ids` alone.
  return tokenizer.Decode(ids);
}

std::vector<std::string> DecodeEachContinuation(const Tokenizer& tokenizer,
                                                std::span<const TokenId> context,
                                                std::span<const TokenId> ids) {
  const size_t prefix_size = std::min(context.size(), kContinuationPrefixTokens);
  const std::span<const TokenId> prefix = context.subspan(context.size() - prefix_size);
  const std::string base = tokenizer.Decode(prefix);
  std::vector<TokenId> joined(prefix.begin(), prefix.end());
  joined.push_back(0);
  std::vector<std::string> texts;
  texts.reserve(ids.size());
  for (const TokenId id : ids) {
    joined.back() = id;
    const TokenId single[] = {id};
    std::string text = prefix_size == 0 ? tokenizer.Decode(single) : tokenizer.Decode(joined);
    if (prefix_size > 0) {
      // As DecodeContinuation: the difference of two decodes, else the token alone.
      text = text.starts_with(base) ? text.substr(base.size()) : tokenizer.Decode(single);
    }
    texts.push_back(std::move(text));
  }
  return texts;
}

int64_t FindInvalidUtf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  size_t pos = 0;
  while (pos < size) {
    const unsigned char lead = bytes[pos];
    if (lead < 0x80) {
      ++pos;
      continue;
    }
    // Sequence length, payload bits of the lead byte, and the smallest code point that needs
    // this length (smaller ones are overlong encodings).
    size_t length = 0;
    uint32_t code_point = 0;
    uint32_t min_code_point = 0;
    if ((lead & 0xe0) == 0xc0) {
      length = 2;
      code_point = lead & 0x1f;
      min_code_point = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3;
      code_point = lead & 0x0f;
      min_code_point = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4;
      code_point = lead & 0x07;
      min_code_point = 0x10000;
    } else {
      return static_cast<int64_t>(pos);  // a continuation byte, or 0xf8..0xff
    }
    if (pos + length > size) return static_cast<int64_t>(pos);  // truncated
    for (size_t i = 1; i < length; ++i) {
      if ((bytes[pos + i] & 0xc0) != 0x80) return static_cast<int64_t>(pos);
      code_point = (code_point << 6) | (bytes[pos + i] & 0x3f);
    }
    const bool surrogate = code_point >= 0xd800 && code_point <= 0xdfff;
    if (code_point < min_code_point || surrogate || code_point > 0x10ffff) {
      return static_cast<int64_t>(pos);
    }
    pos += length;
  }
  return -1;
}

}  // namespace zinf
