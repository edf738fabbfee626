// zinf chat-template: renders conversations through a model's chat template, JSONL in and out
// like `zinf tokenize`, to see exactly the prompt `zinf generate` will tokenize.
#include <nlohmann/json.hpp>

#include <iostream>

#include "cmd/chat_request.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/prompt_file.h"
#include "engine/error.h"
#include "model_formats/checkpoint_chat_template.h"
#include "model_formats/json_depth.h"

namespace zinf::cli {

namespace {

using Json = nlohmann::ordered_json;

struct ChatTemplateOptions {
  std::string model_dir;
  std::string tokenizer_config;
  std::string chat_template = "auto";
};

formats::ChatTemplates OpenTemplates(const ChatTemplateOptions& options) {
  if (options.model_dir.empty() == options.tokenizer_config.empty()) {
    Fail("give exactly one of --model DIR and --tokenizer-config FILE");
  }
  if (!options.tokenizer_config.empty()) {
    const std::filesystem::path config(options.tokenizer_config);
    const std::string choice =
        options.chat_template == "auto" ? config.string() : options.chat_template;
    formats::ChatTemplates templates = formats::ChatTemplates::Load(choice, config.parent_path());
    if (templates.empty()) Fail("--chat-template none leaves nothing to render with");
    return templates;
  }
  if (!std::filesystem::is_directory(options.model_dir)) {
    Fail("--model {}: no such directory", options.model_dir);
  }
  formats::ChatTemplates templates =
      formats::ChatTemplates::Load(options.chat_template, options.model_dir);
  if (!templates.load_error().empty()) Fail("{}", templates.load_error());
  if (templates.empty()) {
    Fail("{} has no chat template (no chat_template.jinja, chat_template.json or "
         "\"chat_template\" in tokenizer_config.json; or --chat-template none); name one with "
         "--chat-template FILE",
         options.model_dir);
  }
  return templates;
}

Json ParseObject(const std::string& line) {
  if (const auto offset = formats::FindJsonNestingOver(line)) {
    Fail("JSON nested deeper than {} levels at byte {}", formats::kMaxJsonDepth, *offset);
  }
  Json object;
  try {
    object = Json::parse(line);
  } catch (const Json::exception& error) {
    Fail("not valid JSON: {}", error.what());
  }
  if (!object.is_object()) Fail("expected a JSON object with \"messages\"");
  return object;
}

// One stdin object to its rendering. Failure: zinf::Error, written as that line's error.
std::string Render(const formats::ChatTemplates& templates, const Json& object) {
  // A generate prompt file's lines pipe straight in: their settings do not change the prompt.
  for (const auto& [key, value] : object.items()) {
    if (key != "add_generation_prompt" && key != "documents" && !IsPromptLineKey(key)) {
      Fail("unknown key \"{}\" (known: messages, tools, documents, add_generation_prompt, "
           "chat_template_kwargs, and the keys of a generate prompt line)",
           key);
    }
  }
  if (!object.contains("messages")) Fail("\"messages\" is missing");
  const auto tools = object.find("tools");
  const auto kwargs = object.find("chat_template_kwargs");
  const ChatPrompt chat =
      ParseChatPrompt(object["messages"], tools == object.end() ? nullptr : &*tools,
                      kwargs == object.end() ? nullptr : &*kwargs);
  formats::ChatTemplateInputs inputs;
  inputs.messages = chat.messages;
  inputs.tools = chat.tools;
  inputs.kwargs = chat.kwargs;
  inputs.documents = object.value("documents", Json());
  if (const auto add = object.find("add_generation_prompt"); add != object.end()) {
    if (!add->is_boolean()) Fail("\"add_generation_prompt\" must be true or false");
    inputs.add_generation_prompt = add->get<bool>();
  }
  return templates.For(!chat.tools.is_null())->Render(inputs);
}

void RunChatTemplate(const ChatTemplateOptions& options) {
  const formats::ChatTemplates templates = OpenTemplates(options);
  std::string line;
  int64_t line_number = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json result;
    try {
      const Json object = ParseObject(line);
      if (object.contains("id")) result["id"] = object["id"];  // to match lines up when piping
      result["text"] = Render(templates, object);
    } catch (const Error& error) {
      result["error"] = fmt::format("stdin:{}: {}", line_number, error.what());
      g_exit_code = kExitRequestsFailed;
    }
    std::cout << result.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
  }
  std::cout.flush();
}

}  // namespace

void AddChatTemplateCommand(CLI::App& app) {
  auto options = std::make_shared<ChatTemplateOptions>();
  CLI::App* command = app.add_subcommand(
      "chat-template",
      "JSONL {\"messages\": [...], \"tools\"?, \"add_generation_prompt\"?, "
      "\"chat_template_kwargs\"?} on stdin -> {\"text\": ...} or {\"error\": ...} on stdout");
  command->add_option("--model", options->model_dir, "converted zinf checkpoint directory");
  command->add_option("--tokenizer-config", options->tokenizer_config,
                      "a tokenizer_config.json holding \"chat_template\" and the special tokens");
  command
      ->add_option("--chat-template", options->chat_template,
                   "auto (the model's own template) or FILE (a .jinja template, or a .json "
                   "holding \"chat_template\")")
      ->capture_default_str();
  command->callback([options] { RunChatTemplate(*options); });
}

}  // namespace zinf::cli
