// ChatPromptIds; see chat_prompt_ids.h.
#include "cmd/chat_prompt_ids.h"

#include <string>

namespace zinf::cli {

std::vector<TokenId> ChatPromptIds(const ChatPrompt& chat,
                                   const formats::ChatTemplate& chat_template,
                                   const Tokenizer& tokenizer, std::time_t now) {
  formats::ChatTemplateInputs inputs;
  inputs.messages = chat.messages;
  inputs.tools = chat.tools;
  inputs.kwargs = chat.kwargs;
  inputs.add_generation_prompt = true;
  inputs.now = now;
  std::string prompt;
  try {
    prompt = chat_template.Render(inputs);
  } catch (const Error& error) {
    throw ChatTemplateFailure(error.what());
  }
  // The template wrote the special tokens (BOS and the turn markers) itself: adding them again
  // would give the model a prompt it was never trained on. transformers encodes the same way.
  return tokenizer.Encode(prompt, /*add_special=*/false);
}

}  // namespace zinf::cli
