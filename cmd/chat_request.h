// A prompt given as a conversation ("messages", with optional "tools" and
// "chat_template_kwargs"), checked as it is read and rendered through the model's chat template
// later (model_formats/chat_template.h).
#pragma once

#include <nlohmann/json.hpp>

namespace zinf::cli {

// Kept in input key order: templates print tool schemas and arguments with tojson as given.
struct ChatPrompt {
  nlohmann::ordered_json messages;  // a non-empty array of objects, each with a string "role"
  nlohmann::ordered_json tools;     // null, or an array of objects
  nlohmann::ordered_json kwargs;    // null, or an object: extra template variables
};

// Checks the shapes a template can rely on and takes the values. `tools` and `kwargs` may be
// null pointers (absent). Failure: zinf::Error without the location, naming the field and, for a
// bad message, its index ("messages[2] must be an object, got string").
ChatPrompt ParseChatPrompt(const nlohmann::ordered_json& messages,
                           const nlohmann::ordered_json* tools,
                           const nlohmann::ordered_json* kwargs);

}  // namespace zinf::cli
