// A model's chat template: the Jinja `chat_template` of its tokenizer_config.json (or a
// chat_template.jinja file), rendered as transformers' apply_chat_template renders it.
#pragma once

#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace zinf::formats {

namespace jinja {
class Template;
}

// What one conversation is rendered with. JSON values keep their input key order (ordered_json),
// because templates print tool schemas and arguments with tojson in the order they were given.
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // null: none
  nlohmann::ordered_json documents;  // null: none
  bool add_generation_prompt = true;
  // Extra template variables (chat_template_kwargs, e.g. enable_thinking); null or an object.
  nlohmann::ordered_json kwargs;
  // What strftime_now() formats; unset: the current local time.
  std::optional<std::time_t> now;
};

// Output and work bounds of one rendering (the sandbox's, beside having no file or env access).
struct ChatRenderLimits {
  size_t max_output_bytes = 64u << 20;
  int max_call_depth = 64;                // macro and call nesting
  int64_t max_loop_iterations = 1 << 24;  // across the whole rendering
};

// The template variables transformers passes from a tokenizer_config.json's special tokens
// (bos_token, eos_token, unk_token, pad_token as strings, additional_special_tokens, ...; an
// AddedToken object {"content": ...} counts as its content). Failure: zinf::Error naming the file.
nlohmann::ordered_json SpecialTokensOf(const std::filesystem::path& tokenizer_config);

// Parsed once, rendered per request. Thread-safety: Render is const and may run concurrently.
class ChatTemplate {
 public:
  // `source` is the template text; `name` names it in errors (a file path, or
  // "PATH chat_template"). `special_tokens` is an object of the template variables transformers
  // passes from the tokenizer's special-tokens map: bos_token, eos_token, unk_token, pad_token (as
  // strings; absent ones are left undefined), additional_special_tokens (a list), ...
  // Failure: throws zinf::Error "NAME:LINE:COL: <what>" for a syntax error, an unknown tag, filter
  // or test, or any construct the engine does not support.
  ChatTemplate(std::string source, std::string name, nlohmann::ordered_json special_tokens);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // The tokenizer_config.json's template: "chat_template" as a string, or as a list of
  // {"name", "template"} (then "default", or "tool_use" when `tools_given` and it exists, as
  // transformers picks). The special tokens are read from the same file (an AddedToken object
  // {"content": ...} counts as its content). nullopt when the file has no chat_template.
  // Failure: zinf::Error naming the file for unreadable JSON or a malformed chat_template.
  static std::optional<ChatTemplate> FromTokenizerConfig(const std::filesystem::path& path,
                                                         bool tools_given = false);
  // A template file (chat_template.jinja), with the special tokens of `tokenizer_config` when
  // that file exists.
  static ChatTemplate FromFile(const std::filesystem::path& template_file,
                               const std::filesystem::path& tokenizer_config);

  // The rendered prompt, byte for byte what transformers renders.
  // Failure: throws zinf::Error "NAME:LINE:COL: <what>" for a runtime error (raise_exception's
  // message, a type error, a limit exceeded); nothing is rendered partially.
  std::string Render(const ChatTemplateInputs& inputs, const ChatRenderLimits& limits = {}) const;

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::string name_;
  nlohmann::ordered_json special_tokens_;
  std::unique_ptr<jinja::Template> template_;
};

}  // namespace zinf::formats
