// BPE: per-word merges with a priority queue over a linked list of symbols,
// following the Rust library's Word::merge_all (lowest rank first, leftmost on
// ties), plus a word cache.
#include "model_formats/tokenizers/hf_tokenizer_bpe.h"

#include <fmt/format.h>

#include <queue>

#include "engine/error.h"
#include "model_formats/tokenizers/hf_tokenizer_text.h"

namespace zinf::formats::hf {
namespace {

// Words longer than this are not cached (they are rare and would bloat the
// cache); the cap on entries bounds memory on long inputs with many distinct
// words.
constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kMaxCacheEntries = 200000;

std::optional<std::string> OptionalString(const nlohmann::json &model, const char *key) {
  if (!model.contains(key) || model.at(key).is_null()) return std::nullopt;
  return model.at(key).get<std::string>();
}

}  // namespace

TokenId ParseTokenId(const nlohmann::json &value, const std::string &file, std::string_view what) {
  // Checked before any conversion: get<TokenId>() of 1e21 or of 2^40 is
  // undefined or wraps.
  const bool in_range = (value.is_number_unsigned() && value.get<uint64_t>() <= kMaxTokenId) ||
                        (value.is_number_integer() && value.get<int64_t>() >= 0 &&
                         value.get<int64_t>() <= kMaxTokenId);
  if (!in_range) {
    Fail("tokenizer '{}': {} has id {}, not an integer in [0, {}]", file, what,
         value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kMaxTokenId);
  }
  return static_cast<TokenId>(value.get<int64_t>());
}

BpeModel::BpeModel(const nlohmann::json &model, const std::string &file) : file_(file) {
  const std::string type = model.value("type", "BPE");
  if (type != "BPE") {
    Fail("tokenizer '{}': unknown model type '{}' (zinf supports BPE)", file, type);
  }
  for (const auto &[token, id_json] : model.at("vocab").items()) {
    const TokenId id = ParseTokenId(id_json, file, fmt::format("vocab token '{}'", token));
    vocab_.emplace(token, id);
    if (static_cast<size_t>(id) >= id_to_token_.size()) {
      id_to_token_.resize(id + 1);
      has_id_.resize(id + 1, false);
    }
    id_to_token_[id] = token;
    has_id_[id] = true;
  }
  byte_fallback_ = model.value("byte_fallback", false);
  fuse_unk_ = model.value("fuse_unk", false);
  ignore_merges_ = model.value("ignore_merges", false);
  continuing_subword_prefix_ = OptionalString(model, "continuing_subword_prefix");
  end_of_word_suffix_ = OptionalString(model, "end_of_word_suffix");
  if (const auto unk = OptionalString(model, "unk_token")) {
    // An unk_token outside the vocab is tolerated until a word needs it, as in
    // the Rust library.
    if (const auto id = TokenToId(*unk)) unk_id_ = *id;
  }
  for (int byte = 0; byte < 256; ++byte) {
    byte_ids_[byte] = TokenToId(fmt::format("<0x{:02X}>", byte)).value_or(-1);
  }

  const size_t prefix_bytes = continuing_subword_prefix_ ? continuing_subword_prefix_->size() : 0;
  const nlohmann::json &merges = model.at("merges");
  merges_.reserve(merges.size());
  int rank = 0;
  for (const nlohmann::json &merge : merges) {
    std::string left;
    std::string right;
    if (merge.is_string()) {  // "a b"
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        Fail("tokenizer '{}': merge {} ('{}') is not two tokens separated by "
             "one space",
             file, rank, text);
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else {  // ["a", "b"]
      if (!merge.is_array() || merge.size() != 2) {
        Fail("tokenizer '{}': merge {} is neither \"a b\" nor [\"a\", \"b\"]", file, rank);
      }
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    }
    const std::string joined = left + right.substr(std::min(prefix_bytes, right.size()));
    const auto left_id = TokenToId(left);
    const auto right_id = TokenToId(right);
    const auto new_id = TokenToId(joined);
    if (!left_id || !right_id || !new_id) {
      Fail("tokenizer '{}': merge {} ('{}' + '{}') names a token outside the "
           "vocabulary",
           file, rank, left, right);
    }
    merges_[PairKey(*left_id, *right_id)] = Merge{rank, *new_id};
    ++rank;
  }
}

std::optional<TokenId> BpeModel::TokenToId(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string *BpeModel::IdToToken(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::Tokenize(std::string_view word, std::vector<TokenId> &out) const {
  if (word.empty()) return;
  if (ignore_merges_) {  // a pre-token that is itself a token is emitted whole
                         // (Llama 3)
    if (const auto id = TokenToId(word)) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<TokenId> ids = MergeWord(word);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kMaxCacheEntries) cache_.emplace(std::string(word), std::move(ids));
  }
}

std::vector<TokenId> BpeModel::MergeWord(std::string_view word) const {
  std::vector<TokenId> symbols;
  symbols.reserve(word.size());
  TokenId pending_unk = -1;  // an unknown run not yet emitted (fused when fuse_unk); -1: none
  std::string piece;
  for (size_t pos = 0; pos < word.size();) {
    const size_t length =
        std::min(Utf8Length(static_cast<unsigned char>(word[pos])), word.size() - pos);
    const bool is_first = pos == 0;
    const bool is_last = pos + length == word.size();
    piece.clear();
    if (!is_first && continuing_subword_prefix_) piece += *continuing_subword_prefix_;
    piece.append(word.substr(pos, length));
    if (is_last && end_of_word_suffix_) piece += *end_of_word_suffix_;
    pos += length;

    if (const auto id = TokenToId(piece)) {
      if (pending_unk >= 0) symbols.push_back(pending_unk);
      pending_unk = -1;
      symbols.push_back(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (const char byte : piece)
        all_bytes = all_bytes && byte_ids_[static_cast<uint8_t>(byte)] >= 0;
      if (all_bytes) {
        for (const char byte : piece) symbols.push_back(byte_ids_[static_cast<uint8_t>(byte)]);
        continue;
      }
    }
    if (!unk_id_) {
      Fail("tokenizer '{}': '{}' is not in the vocabulary and the model has no "
           "unk_token",
           file_, piece);
    }
    if (pending_unk >= 0 && !fuse_unk_) symbols.push_back(pending_unk);
    pending_unk = *unk_id_;
  }
  if (pending_unk >= 0) symbols.push_back(pending_unk);
  ApplyMerges(symbols);
  return symbols;
}

void BpeModel::ApplyMerges(std::vector<TokenId> &symbols) const {
  if (symbols.size() < 2) return;
  const int count = static_cast<int>(symbols.size());
  // A doubly linked list over `symbols`; merged-away entries are marked dead.
  std::vector<int> prev(count);
  std::vector<int> next(count);
  std::vector<bool> alive(count, true);
  for (int i = 0; i < count; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < count ? i + 1 : -1;
  }
  struct Candidate {
    int rank;
    int pos;
    TokenId new_id;
    bool operator>(const Candidate &other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push_pair = [&](int pos) {
    const int right = next[pos];
    if (right < 0) return;
    const auto it = merges_.find(PairKey(symbols[pos], symbols[right]));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
  };
  for (int i = 0; i + 1 < count; ++i) push_pair(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    const int right = next[top.pos];
    // Skip entries made stale by an earlier merge of either symbol.
    const auto it = merges_.find(PairKey(symbols[top.pos], symbols[right]));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    symbols[top.pos] = top.new_id;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.pos;
    if (prev[top.pos] >= 0) push_pair(prev[top.pos]);
    push_pair(top.pos);
  }
  int kept = 0;
  for (int i = 0; i < count; ++i) {
    if (alive[i]) symbols[kept++] = symbols[i];
  }
  symbols.resize(kept);
}

}  // namespace zinf::formats::hf
