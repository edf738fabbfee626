// ChatTemplate: reads a model's chat template and special tokens the way transformers does and
// renders conversations with the Jinja engine of model_formats/jinja/.
#include "model_formats/chat_template.h"

#include <fstream>
#include <sstream>

#include "engine/error.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/python_json.h"
#include "model_formats/jinja/template.h"
#include "model_formats/json_depth.h"

namespace zinf::formats {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("{}: cannot read the file", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::ordered_json ReadJson(const std::filesystem::path& path) {
  const std::string text = ReadFile(path);
  if (auto offset = FindJsonNestingOver(text)) {
    Fail("{}: JSON nested deeper than {} levels at byte {}", path.string(), kMaxJsonDepth, *offset);
  }
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const std::exception& error) {
    Fail("{}: invalid JSON: {}", path.string(), error.what());
  }
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string name,
                           nlohmann::ordered_json special_tokens)
    : source_(std::move(source)),
      name_(std::move(name)),
      special_tokens_(std::move(special_tokens)) {
  template_ = std::make_unique<jinja::Template>(source_, name_);
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::optional<ChatTemplate> ChatTemplate::FromTokenizerConfig(const std::filesystem::path& path,
                                                              bool tools_given) {
  const nlohmann::ordered_json config = ReadJson(path);
  if (!config.is_object() || !config.contains("chat_template") ||
      config["chat_template"].is_null()) {
    return std::nullopt;
  }
  const auto& chat_template = config["chat_template"];
  const std::string where = path.string() + " chat_template";
  if (chat_template.is_string()) {
    return ChatTemplate(chat_template.get<std::string>(), where, SpecialTokensOf(path));
  }
  if (!chat_template.is_array())
    Fail("{}: expected a string or a list of {{name, template}}", where);
  std::optional<std::string> fallback;
  std::optional<std::string> tool_use;
  for (const auto& entry : chat_template) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("template") || !entry["template"].is_string()) {
      Fail("{}: each entry must be {{\"name\": string, \"template\": string}}", where);
    }
    const std::string entry_name = entry["name"].get<std::string>();
    if (entry_name == "default") fallback = entry["template"].get<std::string>();
    if (entry_name == "tool_use") tool_use = entry["template"].get<std::string>();
  }
  if (tools_given && tool_use) {
    return ChatTemplate(*tool_use, where + " tool_use", SpecialTokensOf(path));
  }
  if (!fallback) Fail("{}: no template named \"default\"", where);
  return ChatTemplate(*fallback, where + " default", SpecialTokensOf(path));
}

ChatTemplate ChatTemplate::FromFile(const std::filesystem::path& template_file,
                                    const std::filesystem::path& tokenizer_config) {
  nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
  if (std::filesystem::exists(tokenizer_config)) tokens = SpecialTokensOf(tokenizer_config);
  return ChatTemplate(ReadFile(template_file), template_file.string(), std::move(tokens));
}

std::string ChatTemplate::Render(const ChatTemplateInputs& inputs,
                                 const ChatRenderLimits& limits) const {
  std::vector<std::pair<std::string, jinja::Value>> variables;
  try {
    variables.emplace_back("messages", jinja::FromJson(inputs.messages));
    variables.emplace_back("tools", jinja::FromJson(inputs.tools));
    variables.emplace_back("documents", jinja::FromJson(inputs.documents));
    variables.emplace_back("add_generation_prompt", jinja::Value(inputs.add_generation_prompt));
    auto set = [&](const std::string& key, jinja::Value value) {
      for (auto& [existing, old] : variables) {
        if (existing == key) {
          old = std::move(value);
          return;
        }
      }
      variables.emplace_back(key, std::move(value));
    };
    for (const auto& [key, value] : special_tokens_.items()) set(key, jinja::FromJson(value));
    if (inputs.kwargs.is_object()) {
      for (const auto& [key, value] : inputs.kwargs.items()) set(key, jinja::FromJson(value));
    } else if (!inputs.kwargs.is_null()) {
      Fail("chat template kwargs must be an object, not {}", inputs.kwargs.type_name());
    }
  } catch (const jinja::TemplateError& error) {
    Fail("{}: the chat template's inputs: {}", name_, error.message());
  }
  jinja::RenderLimits engine_limits;
  engine_limits.max_output_bytes = limits.max_output_bytes;
  engine_limits.max_call_depth = limits.max_call_depth;
  engine_limits.max_loop_iterations = limits.max_loop_iterations;
  return template_->Render(std::move(variables), engine_limits, inputs.now);
}

}  // namespace zinf::formats
