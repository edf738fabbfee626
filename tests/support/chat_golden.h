// A chat_golden.jsonl line (../shared/tokenizers/*/, tests/data/chat_templates/*/) as the inputs
// transformers rendered it with.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>

#include "model_formats/chat_template.h"

namespace zinf::testing {

// messages, add_generation_prompt (false when absent), tools, documents and kwargs of `line`,
// rendered at time `now` (the goldens fix strftime_now's clock).
formats::ChatTemplateInputs ChatGoldenInputs(const nlohmann::ordered_json& line, std::time_t now);

}  // namespace zinf::testing
