// Checking a conversation prompt's JSON; see chat_request.h.
// Self-contained (engine headers, nlohmann json, fmt) so the prompt-file fuzz target compiles it in.
#include "cmd/chat_request.h"

#include "engine/error.h"

namespace zinf::cli {

ChatPrompt ParseChatPrompt(const nlohmann::ordered_json& messages,
                           const nlohmann::ordered_json* tools,
                           const nlohmann::ordered_json* kwargs) {
  if (!messages.is_array() || messages.empty()) {
    Fail("\"messages\" must be a non-empty array of messages, got {}",
         messages.is_array() ? "an empty array" : messages.type_name());
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::ordered_json& message = messages[i];
    if (!message.is_object()) {
      Fail("messages[{}] must be an object with \"role\" and \"content\", got {}", i,
           message.type_name());
    }
    const auto role = message.find("role");
    if (role == message.end() || !role->is_string()) {
      Fail("messages[{}] needs a string \"role\" (system, user, assistant, tool, ...)", i);
    }
    // Content is a string, null (an assistant turn with only tool calls) or a list of parts;
    // what the template does with each is its own business.
    const auto content = message.find("content");
    if (content != message.end() &&
        !(content->is_string() || content->is_null() || content->is_array())) {
      Fail("messages[{}].content must be a string, null or an array of parts, got {}", i,
           content->type_name());
    }
  }
  ChatPrompt chat;
  chat.messages = messages;
  if (tools != nullptr && !tools->is_null()) {
    if (!tools->is_array()) Fail("\"tools\" must be an array of tools, got {}", tools->type_name());
    for (size_t i = 0; i < tools->size(); ++i) {
      if (!(*tools)[i].is_object()) {
        Fail("tools[{}] must be an object, got {}", i, (*tools)[i].type_name());
      }
    }
    chat.tools = *tools;
  }
  if (kwargs != nullptr && !kwargs->is_null()) {
    if (!kwargs->is_object()) {
      Fail("\"chat_template_kwargs\" must be an object of template variables, got {}",
           kwargs->type_name());
    }
    chat.kwargs = *kwargs;
  }
  return chat;
}

}  // namespace zinf::cli
