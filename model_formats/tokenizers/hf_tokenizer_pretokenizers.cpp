// tokenizer.json pre-tokenizers, each a small class built from its JSON object;
// the splitting rules follow the Rust library's NormalizedString::split.
#include "model_formats/tokenizers/hf_tokenizer_pretokenizers.h"

#include <algorithm>
#include <tuple>

#include "engine/error.h"
#include "model_formats/tokenizers/hf_tokenizer_normalizers.h"
#include "model_formats/tokenizers/hf_tokenizer_text.h"

namespace zinf::formats::hf {
namespace {

// GPT-2's split: contractions, letter runs, digit runs and symbol runs each
// with an optional leading space, and whitespace runs that leave their last
// space to the next word.
constexpr const char *kGpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
                                     "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior ParseBehavior(const std::string &name, const std::string &what) {
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  Fail("{}: unknown split behavior '{}'", what, name);
}

// Splits `piece` around the matches of `regex` and appends the kept parts to
// `out`.
void SplitPiece(const Piece &piece, const Regex &regex, Behavior behavior, bool invert,
                std::vector<Piece> &out) {
  const std::string &text = piece.text;
  // (begin, end, is_match) covering the whole text, as the Rust find_matches.
  std::vector<std::tuple<size_t, size_t, bool>> parts;
  if (text.empty()) {
    parts.emplace_back(0, 0, false);
  } else {
    size_t previous = 0;
    for (const auto &[begin, end] : regex.FindAll(text)) {
      if (previous != begin) parts.emplace_back(previous, begin, false);
      parts.emplace_back(begin, end, true);
      previous = end;
    }
    if (previous != text.size()) parts.emplace_back(previous, text.size(), false);
  }
  if (invert) {
    for (auto &part : parts) std::get<2>(part) = !std::get<2>(part);
  }
  // (begin, end, remove)
  std::vector<std::tuple<size_t, size_t, bool>> kept;
  switch (behavior) {
    case Behavior::kIsolated:
      for (const auto &[begin, end, is_match] : parts) kept.emplace_back(begin, end, false);
      break;
    case Behavior::kRemoved: kept = parts; break;
    case Behavior::kContiguous: {
      bool previous_match = false;
      for (const auto &[begin, end, is_match] : parts) {
        if (is_match == previous_match && !kept.empty()) {
          std::get<1>(kept.back()) = end;
        } else {
          kept.emplace_back(begin, end, false);
        }
        previous_match = is_match;
      }
      break;
    }
    case Behavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto &[begin, end, is_match] : parts) {
        if (is_match && !previous_match && !kept.empty()) {
          std::get<1>(kept.back()) = end;
        } else {
          kept.emplace_back(begin, end, false);
        }
        previous_match = is_match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        const auto &[begin, end, is_match] = *it;
        if (is_match && !previous_match && !kept.empty()) {
          std::get<0>(kept.back()) = begin;
        } else {
          kept.emplace_back(begin, end, false);
        }
        previous_match = is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
  }
  for (const auto &[begin, end, remove] : kept) {
    if (remove || begin == end) continue;
    out.push_back({text.substr(begin, end - begin), piece.offset + begin});
  }
}

void SplitAll(std::vector<Piece> &pieces, const Regex &regex, Behavior behavior, bool invert) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (const Piece &piece : pieces) SplitPiece(piece, regex, behavior, invert, out);
  pieces = std::move(out);
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<Regex> regex, Behavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void PreTokenize(std::vector<Piece> &pieces) const override {
    SplitAll(pieces, *regex_, behavior_, invert_);
  }

 private:
  std::unique_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex, const std::string &what)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, Regex::Syntax::kRegex, what);
  }
  void PreTokenize(std::vector<Piece> &pieces) const override {
    if (add_prefix_space_) {
      for (Piece &piece : pieces) {  // empty text stays empty, as the Rust prepend
        if (!piece.text.empty() && !piece.text.starts_with(' ')) piece.text.insert(0, 1, ' ');
      }
    }
    if (regex_) SplitAll(pieces, *regex_, Behavior::kIsolated, false);
    const ByteLevelAlphabet &alphabet = GetByteLevelAlphabet();
    for (Piece &piece : pieces) {
      std::string mapped;
      mapped.reserve(piece.text.size() * 2);
      for (const char byte : piece.text)
        mapped += alphabet.byte_to_text[static_cast<uint8_t>(byte)];
      piece.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

// SentencePiece-style: spaces become `replacement`, which is also put in front
// of the text.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split,
                        const std::string &what)
      : replacement_(std::move(replacement)), scheme_(scheme) {
    if (split) split_ = std::make_unique<Regex>(replacement_, Regex::Syntax::kLiteral, what);
  }
  void PreTokenize(std::vector<Piece> &pieces) const override {
    for (Piece &piece : pieces) {
      piece.text = ReplaceAllLiteral(piece.text, " ", replacement_);
      const bool prepend = scheme_ == PrependScheme::kAlways ||
                           (scheme_ == PrependScheme::kFirst && piece.offset == 0);
      if (prepend && !piece.text.empty() && !piece.text.starts_with(replacement_)) {
        piece.text.insert(0, replacement_);
      }
    }
    if (split_) SplitAll(pieces, *split_, Behavior::kMergedWithNext, false);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  std::unique_ptr<Regex> split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void PreTokenize(std::vector<Piece> &pieces) const override {
    for (const auto &step : steps_) step->PreTokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

PrependScheme ParsePrependScheme(const nlohmann::json &json, const std::string &what) {
  if (!json.contains("prepend_scheme")) {  // files older than prepend_scheme
    return json.value("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
  }
  const std::string name = json.at("prepend_scheme").get<std::string>();
  if (name == "always") return PrependScheme::kAlways;
  if (name == "first") return PrependScheme::kFirst;
  if (name == "never") return PrependScheme::kNever;
  Fail("{}: unknown prepend_scheme '{}'", what, name);
}

}  // namespace

const ByteLevelAlphabet &GetByteLevelAlphabet() {
  static const ByteLevelAlphabet alphabet = [] {
    ByteLevelAlphabet table;
    table.code_point_to_byte.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the others take U+0100.. in
    // byte order.
    char32_t next_free = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xa1 && byte <= 0xac) ||
                             (byte >= 0xae && byte <= 0xff);
      const char32_t code_point = printable ? static_cast<char32_t>(byte) : next_free++;
      AppendUtf8(code_point, table.byte_to_text[byte]);
      table.code_point_to_byte[code_point] = byte;
    }
    return table;
  }();
  return alphabet;
}

std::unique_ptr<PreTokenizer> ParsePreTokenizer(const nlohmann::json &json,
                                                const std::string &file) {
  if (json.is_null()) return nullptr;
  const std::string type = json.at("type").get<std::string>();
  const std::string what = fmt::format("tokenizer '{}': pre_tokenizer {}", file, type);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(json.value("add_prefix_space", true),
                                                   json.value("use_regex", true), what);
  }
  if (type == "Split") {
    return std::make_unique<SplitPreTokenizer>(
        ParsePattern(json.at("pattern"), what),
        ParseBehavior(json.at("behavior").get<std::string>(), what), json.value("invert", false));
  }
  if (type == "Metaspace") {
    return std::make_unique<MetaspacePreTokenizer>(json.value("replacement", "\xE2\x96\x81"),
                                                   ParsePrependScheme(json, what),
                                                   json.value("split", true), what);
  }
  if (type == "Digits") {
    const bool individual = json.value("individual_digits", false);
    return std::make_unique<SplitPreTokenizer>(
        std::make_unique<Regex>("\\p{N}", Regex::Syntax::kRegex, what),
        individual ? Behavior::kIsolated : Behavior::kContiguous, false);
  }
  if (type == "Whitespace") {  // word runs and symbol runs; whitespace dropped
    return std::make_unique<SplitPreTokenizer>(
        std::make_unique<Regex>("\\w+|[^\\w\\s]+", Regex::Syntax::kRegex, what), Behavior::kRemoved,
        true);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<SplitPreTokenizer>(
        std::make_unique<Regex>("\\s", Regex::Syntax::kRegex, what), Behavior::kRemoved, false);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const nlohmann::json &step : json.at("pretokenizers")) {
      if (auto parsed = ParsePreTokenizer(step, file)) steps.push_back(std::move(parsed));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  Fail("tokenizer '{}': unknown pre_tokenizer type '{}' (zinf supports "
       "ByteLevel, Split, "
       "Metaspace, Digits, Whitespace, WhitespaceSplit, Sequence)",
       file, type);
}

}  // namespace zinf::formats::hf
