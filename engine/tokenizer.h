// The tokenizer interface, implemented for SentencePiece tokenizer.model and Hugging Face
// tokenizer.json (model_formats/tokenizers/).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zinf {

using TokenId = int32_t;

// Encode/Decode are const and thread-safe.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Text must be valid UTF-8 (callers check; see IsValidUtf8). With add_special, BOS/EOS are added
  // as the tokenizer's config says.
  virtual std::vector<TokenId> Encode(std::string_view text, bool add_special) const = 0;
  // Decodes a whole sequence as the reference library does (a leading dummy-prefix space dropped).
  virtual std::string Decode(std::span<const TokenId> ids) const = 0;
  virtual int vocab_size() const = 0;
  virtual TokenId bos_id() const = 0;  // -1 when none
  virtual TokenId eos_id() const = 0;  // -1 when none
};

// Text of `ids` as it continues `context` (the tokens before it): decoding a suffix alone would
// drop or merge the leading space, so the difference of two decodes is taken.
std::string DecodeContinuation(const Tokenizer& tokenizer, std::span<const TokenId> context,
                               std::span<const TokenId> ids);

// The text of each of `ids` on its own as it would continue `context` (DecodeContinuation of
// one token), sharing one decode of the context: the text of a token and its alternatives.
std::vector<std::string> DecodeEachContinuation(const Tokenizer& tokenizer,
                                                std::span<const TokenId> context,
                                                std::span<const TokenId> ids);

// Returns the byte offset of the first invalid UTF-8 sequence, or -1 when `text` is valid.
int64_t FindInvalidUtf8(std::string_view text);

}  // namespace zinf
