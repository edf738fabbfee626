// The engine's Tokenizer over a Hugging Face tokenizer.json (BPE models:
// byte-level as GPT-2, Llama 3, Qwen; SentencePiece-style with byte fallback as
// Llama 2, Mistral, Phi-3).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer.h"

namespace zinf::formats {

namespace hf {
class BpeModel;
class Normalizer;
class PreTokenizer;
class Decoder;
class AddedTokenMatcher;
struct AddedToken;
}  // namespace hf

// What tokenizer_config.json adds to tokenizer.json.
struct HfTokenizerConfig {
  // When set on a Llama-family tokenizer (tokenizer_class
  // Llama*/CodeLlama*/Gemma*), these replace the post-processor template by
  // "[BOS] $A [EOS]", as transformers' LlamaTokenizerFast does.
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  // transformers' decode-time cleanup (" ." → "." ...). A missing key counts as
  // true, as in transformers.js and older Python transformers (the golden
  // data's reference).
  bool clean_up_tokenization_spaces = true;
  std::string bos_token;  // "" when the config names none
  std::string eos_token;
  std::string tokenizer_class;
};

// Reads `config_path`; a missing file gives the defaults. Throws zinf::Error
// naming the file (and the byte offset) when it is not valid JSON.
HfTokenizerConfig ReadHfTokenizerConfig(const std::string &config_path);

// Owns the parsed tokenizer.json pipeline: added tokens → normalizer →
// pre-tokenizer → BPE → post-processor on encode, and id → token → decoder →
// cleanup on decode. Encode/Decode are const and thread-safe (the BPE word
// cache is behind a mutex). The constructor throws zinf::Error naming the file:
// malformed JSON with its byte offset, an unknown component type with that
// type's name.
class HfTokenizer : public Tokenizer {
 public:
  HfTokenizer(const std::string &tokenizer_json_path, const HfTokenizerConfig &config);
  ~HfTokenizer() override;

  // `text` must be valid UTF-8; invalid text throws zinf::Error with the byte
  // offset.
  std::vector<TokenId> Encode(std::string_view text, bool add_special) const override;
  std::string Decode(std::span<const TokenId> ids) const override;
  int vocab_size() const override { return vocab_size_; }
  TokenId bos_id() const override { return bos_id_; }
  TokenId eos_id() const override { return eos_id_; }

 private:
  void EncodePlain(std::string_view text, size_t offset, std::vector<TokenId> &ids) const;
  std::optional<TokenId> TokenToId(const std::string &token) const;

  std::string path_;
  std::unique_ptr<hf::BpeModel> model_;
  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<hf::Decoder> decoder_;
  std::unique_ptr<hf::AddedTokenMatcher> raw_added_;         // normalized=false tokens
  std::unique_ptr<hf::AddedTokenMatcher> normalized_added_;  // normalized=true tokens
  std::vector<std::string> added_content_;                   // by id; "" where not added
  std::vector<TokenId> prefix_;                              // ids before the text when add_special
  std::vector<TokenId> suffix_;                              // ids after it
  bool clean_up_ = true;
  int vocab_size_ = 0;
  TokenId bos_id_ = -1;
  TokenId eos_id_ = -1;
};

}  // namespace zinf::formats
