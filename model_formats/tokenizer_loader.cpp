// Opens the tokenizer a checkpoint names; SentencePiece is the only kind so far.
#include "model_formats/tokenizer_loader.h"

#include <filesystem>

#include "engine/error.h"
#include "model_formats/sentencepiece_tokenizer.h"

namespace zinf::formats {

std::unique_ptr<Tokenizer> LoadSentencePieceTokenizer(const std::string& model_path, bool add_bos,
                                                      bool add_eos) {
  return std::make_unique<SentencePieceTokenizer>(model_path, add_bos, add_eos);
}

std::unique_ptr<Tokenizer> LoadCheckpointTokenizer(const Checkpoint& checkpoint) {
  if (!checkpoint.tokenizer) {
    Fail("checkpoint '{}' has no tokenizer: pass prompts as token ids, or re-convert from a "
         "Hugging Face directory holding tokenizer.model", checkpoint.directory);
  }
  const TokenizerSpec& spec = *checkpoint.tokenizer;
  if (spec.kind != "sentencepiece") {
    Fail("checkpoint '{}': tokenizer kind '{}' is not supported (only sentencepiece); pass prompts "
         "as token ids", checkpoint.directory, spec.kind);
  }
  const std::filesystem::path path = std::filesystem::path(checkpoint.directory) / spec.file;
  if (!std::filesystem::exists(path)) {
    Fail("checkpoint '{}': tokenizer file '{}' is missing; copy tokenizer.model from the original "
         "model directory", checkpoint.directory, path.string());
  }
  return LoadSentencePieceTokenizer(path.string(), spec.add_bos, spec.add_eos);
}

}  // namespace zinf::formats
