// A chat request's prompt ids: its messages rendered through the chat template and tokenized as
// the template wrote them (generate's request feed and its up-front look at the job share it).
#pragma once

#include <vector>

#include "cmd/prompt_file.h"
#include "engine/tokenizer.h"
#include "model_formats/checkpoint_chat_template.h"

namespace zinf::cli {

// Failure: zinf::Error from the template (raise_exception, a type error), its message as is.
std::vector<TokenId> ChatPromptIds(const ChatPrompt& chat,
                                   const formats::ChatTemplate& chat_template,
                                   const Tokenizer& tokenizer);

}  // namespace zinf::cli
