// Hugging Face config.json → ModelConfig for the Llama family (llama, mistral, qwen2, qwen3) and OPT.
#pragma once

#include <string>

#include "engine/model_config.h"

namespace zinf::formats {

// Throws zinf::Error naming the file and the field for: a missing file, malformed JSON (with the
// byte offset), an unsupported model_type or rope_scaling type, and missing or invalid fields.
ModelConfig LoadHfConfig(const std::string& config_json_path);
ModelConfig ParseHfConfig(const std::string& json_text, const std::string& source_name);

}  // namespace zinf::formats
