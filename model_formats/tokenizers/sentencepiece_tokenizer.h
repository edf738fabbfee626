// The engine's Tokenizer over a SentencePiece model (tokenizer.model), via libsentencepiece.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace zinf::formats {

// Owns one loaded SentencePieceProcessor. Encode/Decode are const and thread-safe (the processor
// is immutable after Load). The constructor throws zinf::Error naming the file when it cannot load.
class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::string& model_path, bool add_bos, bool add_eos);
  ~SentencePieceTokenizer() override;

  std::vector<TokenId> Encode(std::string_view text, bool add_special) const override;
  std::string Decode(std::span<const TokenId> ids) const override;
  int vocab_size() const override { return vocab_size_; }
  TokenId bos_id() const override { return bos_id_; }
  TokenId eos_id() const override { return eos_id_; }

 private:
  std::string model_path_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  bool add_bos_ = true;
  bool add_eos_ = false;
  int vocab_size_ = 0;
  TokenId bos_id_ = -1;
  TokenId eos_id_ = -1;
};

}  // namespace zinf::formats
