// tokenizer.json normalizers, each a small class built from its JSON object.
#include "model_formats/tokenizers/hf_tokenizer_normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "engine/error.h"

namespace zinf::formats::hf {
namespace {

// Unicode normalization forms through utf8proc (STABLE: no composition that
// later Unicode versions could change, as the Rust unicode-normalization
// crate).
class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(utf8proc_option_t options) : options_(options) {}
  std::string Normalize(std::string_view text) const override {
    if (text.empty()) return "";
    utf8proc_uint8_t *mapped = nullptr;
    const utf8proc_ssize_t length =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                     static_cast<utf8proc_ssize_t>(text.size()), &mapped, options_);
    if (length < 0) {
      Fail("Unicode normalization failed: {}", utf8proc_errmsg(length));
    }
    std::string out(reinterpret_cast<const char *>(mapped), static_cast<size_t>(length));
    std::free(mapped);
    return out;
  }

 private:
  utf8proc_option_t options_;
};

// Puts `prepend` in front of non-empty text (Llama-2 style "▁" dummy prefix).
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  std::string Normalize(std::string_view text) const override {
    if (text.empty()) return "";
    return prepend_ + std::string(text);
  }

 private:
  std::string prepend_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string Normalize(std::string_view text) const override {
    return pattern_->ReplaceAll(text, content_);
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

// Simple per-code-point lowercase (utf8proc), with Rust's one multi-character
// special case.
class LowercaseNormalizer : public Normalizer {
 public:
  std::string Normalize(std::string_view text) const override {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
      const auto [code_point, length] = DecodeUtf8(text, pos);
      pos += length;
      if (code_point == 0x130) {  // İ lowercases to "i" + combining dot above
        out.append("i\xCC\x87");
        continue;
      }
      AppendUtf8(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(code_point))),
                 out);
    }
    return out;
  }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string Normalize(std::string_view text) const override {
    size_t begin = 0;
    size_t end = text.size();
    if (left_) {
      while (begin < end) {
        const auto [code_point, length] = DecodeUtf8(text, begin);
        if (!IsWhitespace(code_point)) break;
        begin += length;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
        if (!IsWhitespace(DecodeUtf8(text, start).first)) break;
        end = start;
      }
    }
    return std::string(text.substr(begin, end - begin));
  }

 private:
  bool left_;
  bool right_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  std::string Normalize(std::string_view text) const override {
    std::string current(text);
    for (const auto &step : steps_) current = step->Normalize(current);
    return current;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Regex> ParsePattern(const nlohmann::json &pattern, const std::string &what) {
  if (pattern.contains("String")) {
    return std::make_unique<Regex>(pattern.at("String").get<std::string>(), Regex::Syntax::kLiteral,
                                   what);
  }
  if (pattern.contains("Regex")) {
    return std::make_unique<Regex>(pattern.at("Regex").get<std::string>(), Regex::Syntax::kRegex,
                                   what);
  }
  Fail("{}: pattern {} is neither {{\"String\": ...}} nor {{\"Regex\": ...}}", what,
       pattern.dump());
}

std::unique_ptr<Normalizer> ParseNormalizer(const nlohmann::json &json, const std::string &file) {
  if (json.is_null()) return nullptr;
  const std::string type = json.at("type").get<std::string>();
  const std::string what = fmt::format("tokenizer '{}': normalizer {}", file, type);
  if (type == "NFC")
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (type == "NFD")
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  if (type == "NFKC")
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(
        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  if (type == "Prepend") {
    return std::make_unique<PrependNormalizer>(json.at("prepend").get<std::string>());
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(ParsePattern(json.at("pattern"), what),
                                               json.at("content").get<std::string>());
  }
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(json.value("strip_left", true),
                                             json.value("strip_right", true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const nlohmann::json &step : json.at("normalizers")) {
      if (auto parsed = ParseNormalizer(step, file)) steps.push_back(std::move(parsed));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  Fail("tokenizer '{}': unknown normalizer type '{}' (zinf supports NFC, NFD, "
       "NFKC, NFKD, "
       "Prepend, Replace, Lowercase, Strip, Sequence)",
       file, type);
}

}  // namespace zinf::formats::hf
