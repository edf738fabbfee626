// SentencePiece tokenizer: BOS/EOS handling around libsentencepiece's Encode and Decode.
#include "model_formats/tokenizers/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "engine/error.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/tokenizers/sentencepiece_pieces.h"

namespace zinf::formats {

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path, bool add_bos,
                                               bool add_eos)
    : model_path_(model_path),
      processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()),
      add_bos_(add_bos),
      add_eos_(add_eos) {
  const std::string model_proto = ReadTextFile(model_path);
  CheckSentencePiecePieces(model_proto, model_path);
  const sentencepiece::util::Status status = processor_->LoadFromSerializedProto(model_proto);
  if (!status.ok()) {
    Fail("tokenizer '{}': cannot load SentencePiece model: {}", model_path, status.ToString());
  }
  vocab_size_ = processor_->GetPieceSize();
  bos_id_ = processor_->bos_id();  // -1 when the model defines none
  eos_id_ = processor_->eos_id();
  if (add_bos_ && bos_id_ < 0) Fail("tokenizer '{}': add_bos is set but it has no BOS", model_path);
  if (add_eos_ && eos_id_ < 0) Fail("tokenizer '{}': add_eos is set but it has no EOS", model_path);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<TokenId> SentencePieceTokenizer::Encode(std::string_view text, bool add_special) const {
  std::vector<int> pieces;
  const sentencepiece::util::Status status = processor_->Encode(text, &pieces);
  if (!status.ok()) Fail("tokenizer '{}': cannot encode text: {}", model_path_, status.ToString());
  std::vector<TokenId> ids;
  ids.reserve(pieces.size() + 2);
  if (add_special && add_bos_) ids.push_back(bos_id_);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  if (add_special && add_eos_) ids.push_back(eos_id_);
  return ids;
}

std::string SentencePieceTokenizer::Decode(std::span<const TokenId> ids) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size_) {
      Fail("tokenizer '{}': token id {} at position {} is outside the vocabulary (size {})",
           model_path_, ids[i], i, vocab_size_);
    }
  }
  const std::vector<int> pieces(ids.begin(), ids.end());
  std::string text;
  const sentencepiece::util::Status status = processor_->Decode(pieces, &text);
  if (!status.ok()) Fail("tokenizer '{}': cannot decode ids: {}", model_path_, status.ToString());
  return text;
}

}  // namespace zinf::formats
