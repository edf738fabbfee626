// Finding a checkpoint's chat template; see checkpoint_chat_template.h.
#include "model_formats/checkpoint_chat_template.h"

#include <spdlog/spdlog.h>

#include "engine/error.h"

namespace zinf::formats {
namespace fs = std::filesystem;

namespace {

// A .json file with "chat_template" (string or named list), read with its own special tokens.
void LoadJsonTemplates(const fs::path& file, std::optional<ChatTemplate>& default_template,
                       std::optional<ChatTemplate>& tool_use) {
  default_template = ChatTemplate::FromTokenizerConfig(file, /*tools_given=*/false);
  if (!default_template) return;
  tool_use = ChatTemplate::FromTokenizerConfig(file, /*tools_given=*/true);
  if (tool_use && tool_use->source() == default_template->source()) tool_use.reset();
}

}  // namespace

ChatTemplates ChatTemplates::Load(const std::string& choice, const fs::path& dir) {
  ChatTemplates templates;
  if (choice == "none") return templates;
  const fs::path tokenizer_config = dir / "tokenizer_config.json";
  if (choice != "auto") {
    const fs::path file(choice);
    if (!fs::exists(file)) Fail("--chat-template {}: no such file", choice);
    templates.origin_ = file.string();
    if (file.extension() == ".json") {
      LoadJsonTemplates(file, templates.default_, templates.tool_use_);
      if (!templates.default_) {
        Fail("--chat-template {}: the file has no \"chat_template\"", choice);
      }
    } else {
      templates.default_ = ChatTemplate::FromFile(file, tokenizer_config);
    }
    return templates;
  }
  try {
    templates.LoadOwn(dir);
  } catch (const Error& error) {
    spdlog::warn("the model's chat template cannot be used: {}", error.what());
    templates = ChatTemplates();
    templates.load_error_ = error.what();
  }
  return templates;
}

void ChatTemplates::LoadOwn(const fs::path& dir) {
  ChatTemplates& templates = *this;
  const fs::path tokenizer_config = dir / "tokenizer_config.json";
  // transformers' order: a chat_template.jinja file wins over chat_template.json, which wins over
  // the template inside tokenizer_config.json.
  if (const fs::path jinja = dir / "chat_template.jinja"; fs::exists(jinja)) {
    templates.origin_ = jinja.string();
    templates.default_ = ChatTemplate::FromFile(jinja, tokenizer_config);
  } else if (const fs::path json = dir / "chat_template.json"; fs::exists(json)) {
    templates.origin_ = json.string();
    LoadJsonTemplates(json, templates.default_, templates.tool_use_);
    // chat_template.json holds only the template: the special tokens are tokenizer_config's.
    if (fs::exists(tokenizer_config)) {
      const nlohmann::ordered_json tokens = SpecialTokensOf(tokenizer_config);
      for (std::optional<ChatTemplate>* slot : {&templates.default_, &templates.tool_use_}) {
        if (!*slot) continue;
        std::string source = (*slot)->source(), name = (*slot)->name();
        slot->emplace(std::move(source), std::move(name), tokens);
      }
    }
  } else if (fs::exists(tokenizer_config)) {
    templates.origin_ = tokenizer_config.string();
    LoadJsonTemplates(tokenizer_config, templates.default_, templates.tool_use_);
  }
}

const ChatTemplate* ChatTemplates::For(bool has_tools) const {
  if (has_tools && tool_use_) return &*tool_use_;
  return default_ ? &*default_ : nullptr;
}

}  // namespace zinf::formats
