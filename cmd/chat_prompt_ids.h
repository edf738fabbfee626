// A chat request's prompt ids: its messages rendered through the chat template and tokenized as
// the template wrote them (generate's request feed and its up-front look at the job share it).
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

// `now` is what strftime_now() formats: one time per run, so that a prompt measured before the
// run renders to the same tokens when it runs. Failure: ChatTemplateFailure with the template's
// message; the tokenizer's errors as they are.
std::vector<TokenId> ChatPromptIds(const ChatPrompt& chat,
                                   const formats::ChatTemplate& chat_template,
                                   const Tokenizer& tokenizer, std::time_t now);

}  // namespace zinf::cli
