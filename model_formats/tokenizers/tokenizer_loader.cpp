// Opens the tokenizer a checkpoint names: SentencePiece tokenizer.model or HF tokenizer.json.
#include "model_formats/tokenizers/tokenizer_loader.h"

#include <filesystem>

#include "engine/error.h"
#include "model_formats/tokenizers/hf_tokenizer.h"
#include "model_formats/tokenizers/sentencepiece_tokenizer.h"

namespace zinf::formats {

std::unique_ptr<Tokenizer> LoadSentencePieceTokenizer(const std::string& model_path, bool add_bos,
                                                      bool add_eos) {
  return std::make_unique<SentencePieceTokenizer>(model_path, add_bos, add_eos);
}

std::unique_ptr<Tokenizer> LoadHfJsonTokenizer(const std::string& tokenizer_json_path) {
  const std::filesystem::path config_path =
      std::filesystem::path(tokenizer_json_path).parent_path() / "tokenizer_config.json";
  return std::make_unique<HfTokenizer>(tokenizer_json_path,
                                       ReadHfTokenizerConfig(config_path.string()));
}

std::unique_ptr<Tokenizer> LoadCheckpointTokenizer(const Checkpoint& checkpoint) {
  if (!checkpoint.tokenizer) {
    Fail("checkpoint '{}' has no tokenizer: pass prompts as token ids, or re-convert from a "
         "Hugging Face directory holding tokenizer.model",
         checkpoint.directory);
  }
  const TokenizerSpec& spec = *checkpoint.tokenizer;
  if (spec.kind != "sentencepiece" && spec.kind != "hf-json") {
    Fail("checkpoint '{}': tokenizer kind '{}' is not supported (sentencepiece or hf-json); pass "
         "prompts as token ids",
         checkpoint.directory, spec.kind);
  }
  const std::filesystem::path path = std::filesystem::path(checkpoint.directory) / spec.file;
  if (!std::filesystem::exists(path)) {
    Fail("checkpoint '{}': {} tokenizer file '{}' is missing; copy {} from the original model "
         "directory",
         checkpoint.directory, spec.kind, path.string(), spec.file);
  }
  if (spec.kind == "hf-json") return LoadHfJsonTokenizer(path.string());
  return LoadSentencePieceTokenizer(path.string(), spec.add_bos, spec.add_eos);
}

}  // namespace zinf::formats
