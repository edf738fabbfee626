// PromptIds; see prompt_ids.h.
#include "cmd/prompt_ids.h"

#include <string>

namespace zinf::cli {

std::vector<TokenId> PromptIds(const PromptEntry& entry, const Tokenizer& tokenizer,
                               const formats::ChatTemplates& chat_templates, std::time_t now) {
  if (entry.text) return tokenizer.Encode(*entry.text, /*add_special=*/true);
  ZINF_CHECK(entry.chat, "line {}: a prompt of neither text nor messages", entry.line);
  const formats::ChatTemplate* chat_template = chat_templates.For(!entry.chat->tools.is_null());
  ZINF_CHECK(chat_template != nullptr, "line {}: a chat prompt without a template", entry.line);
  formats::ChatTemplateInputs inputs;
  inputs.messages = entry.chat->messages;
  inputs.tools = entry.chat->tools;
  inputs.kwargs = entry.chat->kwargs;
  inputs.add_generation_prompt = true;
  inputs.now = now;
  std::string prompt;
  try {
    prompt = chat_template->Render(inputs);
  } catch (const Error& error) {
    throw ChatTemplateFailure(error.what());
  }
  // The template wrote the special tokens (BOS and the turn markers) itself: adding them again
  // would give the model a prompt it was never trained on. transformers encodes the same way.
  return tokenizer.Encode(prompt, /*add_special=*/false);
}

}  // namespace zinf::cli
