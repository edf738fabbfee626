// The tokenizer.json "BPE" model: vocabulary, ranked merges, byte fallback and
// unknown tokens.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer.h"

namespace zinf::formats::hf {

// Hash for unordered_map<std::string, ...> lookups by string_view without a
// temporary string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using Vocab = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

// Ids above this are refused as corrupt: the largest real vocabularies hold ~260K tokens, and
// tables indexed by id (BpeModel, added tokens) would otherwise take gigabytes.
constexpr TokenId kMaxTokenId = (1 << 24) - 1;

// A token id in tokenizer.json: an integer in [0, kMaxTokenId]. Anything else (a fraction, a
// negative or huge number, a string) throws zinf::Error naming `file` and `what`.
TokenId ParseTokenId(const nlohmann::json &value, const std::string &file, std::string_view what);

// Owns the vocabulary and merge table (immutable after construction) and a word
// → ids cache behind a mutex, so Tokenize is thread-safe. The constructor
// throws zinf::Error naming `file` when the model is not BPE or a merge names a
// token outside the vocabulary.
class BpeModel {
 public:
  BpeModel(const nlohmann::json &model, const std::string &file);

  // Appends the ids of one pre-token (already byte-level mapped where the file
  // asks for it).
  void Tokenize(std::string_view word, std::vector<TokenId> &out) const;

  std::optional<TokenId> TokenToId(std::string_view token) const;
  // The token text of `id`, or nullptr when the vocabulary has no such id.
  const std::string *IdToToken(TokenId id) const;
  // One more than the largest id in the vocabulary.
  int size() const { return static_cast<int>(id_to_token_.size()); }

 private:
  struct Merge {
    int rank;
    TokenId new_id;
  };
  static uint64_t PairKey(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  // Splits `word` into vocabulary symbols and applies the merges, lowest rank
  // first.
  std::vector<TokenId> MergeWord(std::string_view word) const;
  void ApplyMerges(std::vector<TokenId> &symbols) const;

  std::string file_;
  Vocab vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;  // keyed by PairKey(left, right)
  std::optional<TokenId> unk_id_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::optional<std::string> continuing_subword_prefix_;
  std::optional<std::string> end_of_word_suffix_;
  std::array<TokenId, 256> byte_ids_{};  // id of "<0xAB>" per byte; -1 when absent

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> cache_;
};

}  // namespace zinf::formats::hf
