// tokenizer.json normalizers (NFC/NFD/NFKC/NFKD, Prepend, Replace, Lowercase,
// Strip, Sequence).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model_formats/tokenizers/hf_tokenizer_text.h"

namespace zinf::formats::hf {

// Rewrites a piece of input text before pre-tokenization. Immutable and
// thread-safe once built.
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string Normalize(std::string_view text) const = 0;
};

// The tokenizer.json "normalizer" object; nullptr for JSON null. Throws
// zinf::Error naming the component type and `file` for a type zinf does not
// implement.
std::unique_ptr<Normalizer> ParseNormalizer(const nlohmann::json &json, const std::string &file);

// A {"String": s} or {"Regex": r} pattern (used by Replace and Split) as one
// compiled regex: a String pattern matches literally, as the Rust library
// escapes it.
std::unique_ptr<Regex> ParsePattern(const nlohmann::json &pattern, const std::string &what);

}  // namespace zinf::formats::hf
