// tokenizer.json pre-tokenizers (ByteLevel, Split, Metaspace, Digits,
// Whitespace, Sequence) and the GPT-2 byte-level alphabet they share with the
// decoders.
#pragma once

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zinf::formats::hf {

// One pre-token: its text and the byte offset where it starts in the caller's
// input (only "is it 0" matters: Metaspace's prepend_scheme "first" prepends at
// the very start only).
struct Piece {
  std::string text;
  size_t offset = 0;
};

// Splits and rewrites pieces before the model sees them. Immutable and
// thread-safe once built.
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their pre-tokens, in order; empty pre-tokens are
  // dropped.
  virtual void PreTokenize(std::vector<Piece> &pieces) const = 0;
};

// The tokenizer.json "pre_tokenizer" object; nullptr for JSON null. Throws
// zinf::Error naming the component type and `file` for a type zinf does not
// implement.
std::unique_ptr<PreTokenizer> ParsePreTokenizer(const nlohmann::json &json,
                                                const std::string &file);

// GPT-2's bytes_to_unicode: each byte as a printable character (UTF-8), and
// back.
struct ByteLevelAlphabet {
  std::array<std::string, 256> byte_to_text;
  std::array<int, 512> code_point_to_byte;  // -1 where no byte maps; every image is < U+0200
};
const ByteLevelAlphabet &GetByteLevelAlphabet();

}  // namespace zinf::formats::hf
