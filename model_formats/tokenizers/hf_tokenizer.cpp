// HfTokenizer: loads tokenizer.json into its components and runs the
// encode/decode pipelines.
#include "model_formats/tokenizers/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
#include "model_formats/json_depth.h"
#include "model_formats/tokenizers/hf_tokenizer_added_tokens.h"
#include "model_formats/tokenizers/hf_tokenizer_bpe.h"
#include "model_formats/tokenizers/hf_tokenizer_decoders.h"
#include "model_formats/tokenizers/hf_tokenizer_normalizers.h"
#include "model_formats/tokenizers/hf_tokenizer_postprocessor.h"
#include "model_formats/tokenizers/hf_tokenizer_pretokenizers.h"

namespace zinf::formats {
namespace {

nlohmann::json ReadJsonFile(const std::string &path, const char *what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("{} '{}': cannot open the file", what, path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (const auto offset = FindJsonNestingOver(text))
    Fail("{} '{}': JSON nested deeper than {} levels at byte {}", what, path, kMaxJsonDepth,
         *offset);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error &error) {
    Fail("{} '{}': malformed JSON at byte {}: {}", what, path, error.byte, error.what());
  } catch (const nlohmann::json::exception &error) {  // e.g. a number too large
    Fail("{} '{}': malformed JSON: {}", what, path, error.what());
  }
}

// A special-token entry of tokenizer_config.json: "text", {"content": "text",
// ...} or null.
std::string TokenText(const nlohmann::json &config, const char *key) {
  if (!config.contains(key)) return "";
  const nlohmann::json &value = config.at(key);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content")) return value.at("content").get<std::string>();
  return "";
}

std::optional<bool> OptionalBool(const nlohmann::json &config, const char *key) {
  if (!config.contains(key) || !config.at(key).is_boolean()) return std::nullopt;
  return config.at(key).get<bool>();
}

bool IsLlamaFamily(const std::string &tokenizer_class) {
  for (const char *prefix : {"LlamaTokenizer", "CodeLlamaTokenizer", "GemmaTokenizer"}) {
    if (tokenizer_class.starts_with(prefix)) return true;
  }
  return false;
}

// transformers' clean_up_tokenization: drops the space the old word-level
// tokenizers put before punctuation and English contractions. Applied in this
// order, as transformers does.
std::string CleanUpTokenizationSpaces(std::string text) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto &[from, to] : kRules) text = hf::ReplaceAllLiteral(text, from, to);
  return text;
}

}  // namespace

HfTokenizerConfig ReadHfTokenizerConfig(const std::string &config_path) {
  HfTokenizerConfig result;
  if (!std::filesystem::exists(config_path)) return result;
  const nlohmann::json config = ReadJsonFile(config_path, "tokenizer config");
  if (!config.is_object()) Fail("tokenizer config '{}': not a JSON object", config_path);
  result.add_bos_token = OptionalBool(config, "add_bos_token");
  result.add_eos_token = OptionalBool(config, "add_eos_token");
  result.clean_up_tokenization_spaces =
      OptionalBool(config, "clean_up_tokenization_spaces").value_or(true);
  result.bos_token = TokenText(config, "bos_token");
  result.eos_token = TokenText(config, "eos_token");
  if (config.contains("tokenizer_class") && config.at("tokenizer_class").is_string()) {
    result.tokenizer_class = config.at("tokenizer_class").get<std::string>();
  }
  return result;
}

HfTokenizer::HfTokenizer(const std::string &tokenizer_json_path, const HfTokenizerConfig &config)
    : path_(tokenizer_json_path), clean_up_(config.clean_up_tokenization_spaces) {
  const nlohmann::json json = ReadJsonFile(path_, "tokenizer");
  try {
    model_ = std::make_unique<hf::BpeModel>(json.at("model"), path_);
    normalizer_ = hf::ParseNormalizer(json.value("normalizer", nlohmann::json()), path_);
    pre_tokenizer_ = hf::ParsePreTokenizer(json.value("pre_tokenizer", nlohmann::json()), path_);
    decoder_ = hf::ParseDecoder(json.value("decoder", nlohmann::json()), path_);
    const hf::SpecialTemplate special =
        hf::ParsePostProcessor(json.value("post_processor", nlohmann::json()), path_);
    prefix_ = special.prefix;
    suffix_ = special.suffix;

    std::vector<hf::AddedToken> added =
        hf::ParseAddedTokens(json.value("added_tokens", nlohmann::json()), path_);
    vocab_size_ = model_->size();
    std::vector<hf::AddedToken> raw;
    std::vector<hf::AddedToken> normalized;
    std::vector<std::string> normalized_contents;
    for (const hf::AddedToken &token : added) {
      vocab_size_ = std::max(vocab_size_, token.id + 1);
      if (static_cast<size_t>(token.id) >= added_content_.size()) {
        added_content_.resize(token.id + 1);
      }
      added_content_[token.id] = token.content;
      if (token.normalized && normalizer_) {  // matched in normalized text, so normalize it too
        normalized_contents.push_back(normalizer_->Normalize(token.content));
        normalized.push_back(token);
      } else {
        raw.push_back(token);
      }
    }
    std::vector<std::string> raw_contents;
    for (const hf::AddedToken &token : raw) raw_contents.push_back(token.content);
    raw_added_ = std::make_unique<hf::AddedTokenMatcher>(std::move(raw), std::move(raw_contents));
    normalized_added_ = std::make_unique<hf::AddedTokenMatcher>(std::move(normalized),
                                                                std::move(normalized_contents));
  } catch (const nlohmann::json::exception &error) {
    Fail("tokenizer '{}': unexpected JSON structure: {}", path_, error.what());
  }

  if (!config.bos_token.empty()) bos_id_ = TokenToId(config.bos_token).value_or(-1);
  if (!config.eos_token.empty()) eos_id_ = TokenToId(config.eos_token).value_or(-1);
  if (config.bos_token.empty() && !prefix_.empty()) bos_id_ = prefix_.front();
  if (IsLlamaFamily(config.tokenizer_class) &&
      (config.add_bos_token.has_value() || config.add_eos_token.has_value())) {
    prefix_.clear();
    suffix_.clear();
    if (config.add_bos_token.value_or(true)) {
      if (bos_id_ < 0) Fail("tokenizer '{}': add_bos_token is set but it has no BOS", path_);
      prefix_.push_back(bos_id_);
    }
    if (config.add_eos_token.value_or(false)) {
      if (eos_id_ < 0) Fail("tokenizer '{}': add_eos_token is set but it has no EOS", path_);
      suffix_.push_back(eos_id_);
    }
  }
}

HfTokenizer::~HfTokenizer() = default;

std::optional<TokenId> HfTokenizer::TokenToId(const std::string &token) const {
  for (size_t id = 0; id < added_content_.size(); ++id) {
    if (added_content_[id] == token) return static_cast<TokenId>(id);
  }
  return model_->TokenToId(token);
}

void HfTokenizer::EncodePlain(std::string_view text, size_t offset,
                              std::vector<TokenId> &ids) const {
  std::vector<hf::Piece> pieces;
  pieces.push_back({std::string(text), offset});
  if (pre_tokenizer_) pre_tokenizer_->PreTokenize(pieces);
  for (const hf::Piece &piece : pieces) model_->Tokenize(piece.text, ids);
}

std::vector<TokenId> HfTokenizer::Encode(std::string_view text, bool add_special) const {
  if (const int64_t bad = FindInvalidUtf8(text); bad >= 0) {
    Fail("tokenizer '{}': input text is not valid UTF-8 at byte {}", path_, bad);
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + prefix_.size() + suffix_.size());
  if (add_special) ids.insert(ids.end(), prefix_.begin(), prefix_.end());
  for (const hf::Segment &segment : raw_added_->Split(text)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    if (segment.begin == segment.end) continue;
    const std::string_view raw = text.substr(segment.begin, segment.end - segment.begin);
    if (!normalizer_) {
      EncodePlain(raw, segment.begin, ids);
      continue;
    }
    const std::string normalized = normalizer_->Normalize(raw);
    for (const hf::Segment &inner : normalized_added_->Split(normalized)) {
      if (inner.id >= 0) {
        ids.push_back(inner.id);
      } else if (inner.begin < inner.end) {
        EncodePlain(std::string_view(normalized).substr(inner.begin, inner.end - inner.begin),
                    segment.begin + inner.begin, ids);
      }
    }
  }
  if (add_special) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::string HfTokenizer::Decode(std::span<const TokenId> ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const TokenId id = ids[i];
    if (id >= 0 && static_cast<size_t>(id) < added_content_.size() && !added_content_[id].empty()) {
      tokens.push_back(added_content_[id]);
    } else if (const std::string *token = model_->IdToToken(id)) {
      tokens.push_back(*token);
    } else {
      Fail("tokenizer '{}': token id {} at position {} is outside the "
           "vocabulary (size {})",
           path_, id, i, vocab_size_);
    }
  }
  std::string text;
  if (decoder_) {
    decoder_->DecodeChain(tokens);
    for (const std::string &token : tokens) text += token;
  } else {  // the Rust library joins undecoded tokens with spaces
    for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
  }
  return clean_up_ ? CleanUpTokenizationSpaces(std::move(text)) : text;
}

}  // namespace zinf::formats
