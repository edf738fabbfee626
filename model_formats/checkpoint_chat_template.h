// Which chat template renders a request's "messages": the checkpoint's own (chat_template.jinja,
// chat_template.json or tokenizer_config.json, as transformers looks for them), a file the user
// names, or none.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "model_formats/chat_template.h"

namespace zinf::formats {

// The template(s) of one run. A tokenizer_config.json may name several templates; transformers
// renders a request with tools through "tool_use" when there is one, else through "default".
// Thread-safety: const methods may run concurrently.
class ChatTemplates {
 public:
  // `choice` is "auto" (the checkpoint's template in `dir`, if it has one), "none", or a path: a
  // .jinja template file, or a .json file holding "chat_template" (tokenizer_config.json or
  // chat_template.json). The special tokens come from `dir`/tokenizer_config.json (or from the
  // .json file itself). `dir` is a checkpoint directory or a Hugging Face one.
  // Failure: zinf::Error naming the file (unreadable, malformed JSON, a template syntax error, a
  // named FILE without a chat_template). With "auto" such a failure leaves the result empty and
  // sets load_error() instead.
  static ChatTemplates Load(const std::string& choice, const std::filesystem::path& dir);

  bool empty() const { return !default_; }
  // The template for a request; nullptr when empty().
  const ChatTemplate* For(bool has_tools) const;
  // Where the template came from, for logs and errors ("DIR/tokenizer_config.json").
  const std::string& origin() const { return origin_; }
  // Why the checkpoint's own template could not be used ("auto" only: a broken template must not
  // stop runs that have no chat prompts, so it is reported when one needs it); empty when fine.
  const std::string& load_error() const { return load_error_; }

 private:
  void LoadOwn(const std::filesystem::path& dir);  // "auto"

  std::optional<ChatTemplate> default_;
  std::optional<ChatTemplate> tool_use_;
  std::string origin_;
  std::string load_error_;
};

}  // namespace zinf::formats
