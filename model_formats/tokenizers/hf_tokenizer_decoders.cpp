// tokenizer.json decoders, each a small class built from its JSON object.
#include "model_formats/tokenizers/hf_tokenizer_decoders.h"

#include "engine/error.h"
#include "engine/tokenizer.h"
#include "model_formats/tokenizers/hf_tokenizer_normalizers.h"
#include "model_formats/tokenizers/hf_tokenizer_pretokenizers.h"
#include "model_formats/tokenizers/hf_tokenizer_text.h"

namespace zinf::formats::hf {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// Byte-level symbols back to bytes, all tokens joined, invalid UTF-8 replaced
// by U+FFFD. A token with a character outside the byte alphabet (an added token
// such as "<|eot_id|>" with a space) contributes its own bytes, as in the Rust
// library.
class ByteLevelDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string> &tokens) const override {
    const ByteLevelAlphabet &alphabet = GetByteLevelAlphabet();
    std::string bytes;
    std::string token_bytes;
    for (const std::string &token : tokens) {
      token_bytes.clear();
      bool mapped = true;
      for (size_t pos = 0; pos < token.size() && mapped;) {
        const auto [code_point, length] = DecodeUtf8(token, pos);
        pos += length;
        const int byte = code_point < alphabet.code_point_to_byte.size()
                             ? alphabet.code_point_to_byte[code_point]
                             : -1;
        if (byte < 0) mapped = false;
        token_bytes.push_back(static_cast<char>(byte));
      }
      bytes += mapped ? token_bytes : token;
    }
    tokens.assign(1, Utf8Lossy(bytes));
  }
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens) token = pattern_->ReplaceAll(token, content_);
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

// Runs of "<0xAB>" tokens become the text of their bytes (one U+FFFD per byte
// when invalid).
class ByteFallbackDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;  // bytes of the current run
    size_t pending_count = 0;
    auto flush = [&] {
      if (pending_count == 0) return;
      if (FindInvalidUtf8(pending) < 0) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending_count; ++i) out.emplace_back(kReplacementCharacter);
      }
      pending.clear();
      pending_count = 0;
    };
    for (std::string &token : tokens) {
      if (const int byte = ParseByteToken(token); byte >= 0) {
        pending.push_back(static_cast<char>(byte));
        ++pending_count;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  // The byte of a "<0xAB>" token, or -1.
  static int ParseByteToken(const std::string &token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>') return -1;
    const int high = HexDigit(token[3]);
    const int low = HexDigit(token[4]);
    return high < 0 || low < 0 ? -1 : high * 16 + low;
  }
};

class FuseDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string> &tokens) const override {
    std::string joined;
    for (const std::string &token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

// Removes up to `start` leading and `stop` trailing copies of `content` from
// each token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens) {
      std::string_view view = token;
      for (size_t i = 0; i < start_ && view.starts_with(content_); ++i) {
        view.remove_prefix(content_.size());
      }
      for (size_t i = 0; i < stop_ && view.ends_with(content_); ++i) {
        view.remove_suffix(content_.size());
      }
      token = std::string(view);
    }
  }

 private:
  std::string content_;
  size_t start_;
  size_t stop_;
};

// The replacement becomes a space, except in the first token, where it is
// dropped (the prefix the pre-tokenizer added) unless the prepend scheme is
// "never".
class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool drop_first)
      : replacement_(std::move(replacement)), drop_first_(drop_first) {}
  void DecodeChain(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = ReplaceAllLiteral(tokens[i], replacement_, i == 0 && drop_first_ ? "" : " ");
    }
  }

 private:
  std::string replacement_;
  bool drop_first_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void DecodeChain(std::vector<std::string> &tokens) const override {
    for (const auto &step : steps_) step->DecodeChain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> ParseDecoder(const nlohmann::json &json, const std::string &file) {
  if (json.is_null()) return nullptr;
  const std::string type = json.at("type").get<std::string>();
  const std::string what = fmt::format("tokenizer '{}': decoder {}", file, type);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(ParsePattern(json.at("pattern"), what),
                                            json.at("content").get<std::string>());
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(json.at("content").get<std::string>(),
                                          json.value("start", size_t{0}),
                                          json.value("stop", size_t{0}));
  }
  if (type == "Metaspace") {
    bool drop_first = json.value("add_prefix_space", true);
    if (json.contains("prepend_scheme")) {
      drop_first = json.at("prepend_scheme").get<std::string>() != "never";
    }
    return std::make_unique<MetaspaceDecoder>(json.value("replacement", "\xE2\x96\x81"),
                                              drop_first);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const nlohmann::json &step : json.at("decoders")) {
      if (auto parsed = ParseDecoder(step, file)) steps.push_back(std::move(parsed));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  Fail("tokenizer '{}': unknown decoder type '{}' (zinf supports ByteLevel, "
       "Replace, "
       "ByteFallback, Fuse, Strip, Metaspace, Sequence)",
       file, type);
}

}  // namespace zinf::formats::hf
