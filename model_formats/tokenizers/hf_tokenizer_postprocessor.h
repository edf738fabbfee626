// tokenizer.json post-processors: what Encode(text, add_special=true) puts
// around the ids.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer.h"

namespace zinf::formats::hf {

// The single-sequence template, flattened: ids before and after the encoded
// text. Pair templates are not needed by zinf (one prompt is one sequence) and
// are ignored.
struct SpecialTemplate {
  std::vector<TokenId> prefix;
  std::vector<TokenId> suffix;
};

// The tokenizer.json "post_processor" (TemplateProcessing, ByteLevel, Sequence,
// RobertaProcessing, BertProcessing) as one template; an empty one for JSON
// null. Throws zinf::Error naming the component type and `file` for a type zinf
// does not implement.
SpecialTemplate ParsePostProcessor(const nlohmann::json &json, const std::string &file);

}  // namespace zinf::formats::hf
