// The token ids a text or chat prompt runs with: text tokenized with the tokenizer's special
// tokens, chat messages rendered through the chat template and tokenized as the template wrote
// them (generate's request feed and its up-front look at the job share it).
#pragma once

#include <ctime>
#include <vector>

#include "cmd/prompt_file.h"
#include "engine/error.h"
#include "engine/tokenizer.h"
#include "model_formats/checkpoint_chat_template.h"

namespace zinf::cli {

// The template failed for this request (raise_exception, a type error): the request's error,
// not the run's.
class ChatTemplateFailure : public Error {
 public:
  using Error::Error;
};

// `entry` has text or chat messages, and for chat `chat_templates` has a template (the callers
// refuse the entry otherwise). `now` is what strftime_now() formats: one time per run, so that a
// prompt measured before the run renders to the same tokens when it runs. Failure:
// ChatTemplateFailure with the template's message; the tokenizer's errors as they are.
std::vector<TokenId> PromptIds(const PromptEntry& entry, const Tokenizer& tokenizer,
                               const formats::ChatTemplates& chat_templates, std::time_t now);

}  // namespace zinf::cli
