// Opens the tokenizer a checkpoint names, behind the engine's Tokenizer interface.
#pragma once

#include <memory>
#include <string>

#include "engine/checkpoint.h"
#include "engine/tokenizer.h"

namespace zinf::formats {

// A SentencePiece tokenizer.model file; add_bos/add_eos as tokenizer_config.json says.
std::unique_ptr<Tokenizer> LoadSentencePieceTokenizer(const std::string& model_path, bool add_bos,
                                                      bool add_eos);
// A Hugging Face tokenizer.json, with the tokenizer_config.json beside it when there is one.
std::unique_ptr<Tokenizer> LoadHfJsonTokenizer(const std::string& tokenizer_json_path);
// The tokenizer named by a converted checkpoint's manifest. Throws zinf::Error when it has none.
std::unique_ptr<Tokenizer> LoadCheckpointTokenizer(const Checkpoint& checkpoint);

}  // namespace zinf::formats
