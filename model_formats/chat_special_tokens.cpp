// The special-token variables a chat template sees; see SpecialTokensOf in chat_template.h.
#include <fstream>
#include <sstream>

#include "engine/error.h"
#include "model_formats/chat_template.h"
#include "model_formats/json_depth.h"

namespace zinf::formats {
namespace fs = std::filesystem;

namespace {

using Json = nlohmann::ordered_json;

// transformers' SPECIAL_TOKENS_ATTRIBUTES: what its special_tokens_map holds, when set.
constexpr const char* kSpecialTokenKeys[] = {
    "bos_token", "eos_token", "unk_token",  "sep_token",
    "pad_token", "cls_token", "mask_token", "additional_special_tokens"};

Json ReadJsonFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) Fail("cannot open {}", path.string());
  std::stringstream text;
  text << file.rdbuf();
  const std::string content = text.str();
  if (const auto offset = FindJsonNestingOver(content)) {
    Fail("{}: JSON nested deeper than {} levels at byte {}", path.string(), kMaxJsonDepth, *offset);
  }
  try {
    return Json::parse(content);
  } catch (const Json::exception& error) {
    Fail("{}: not valid JSON: {}", path.string(), error.what());
  }
}

// A token as tokenizer_config.json writes it: a string, or an AddedToken {"content": ...}.
std::optional<Json> TokenText(const Json& value) {
  if (value.is_string()) return value;
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"];
  }
  return std::nullopt;
}

// Adds the special tokens of `config` that `tokens` does not hold yet.
void AddMissing(const Json& config, Json& tokens) {
  if (!config.is_object()) return;
  for (const char* key : kSpecialTokenKeys) {
    const auto it = config.find(key);
    if (it == config.end() || tokens.contains(key)) continue;
    if (std::string_view(key) == "additional_special_tokens") {
      if (!it->is_array()) continue;
      Json list = Json::array();
      for (const Json& token : *it) {
        if (std::optional<Json> text = TokenText(token)) list.push_back(*text);
      }
      tokens[key] = std::move(list);
    } else if (std::optional<Json> text = TokenText(*it)) {
      tokens[key] = *text;
    }
  }
}

}  // namespace

nlohmann::ordered_json SpecialTokensOf(const fs::path& tokenizer_config) {
  Json tokens = Json::object();
  // transformers reads tokenizer_config.json first; special_tokens_map.json beside it only fills
  // the tokens the config leaves unset.
  AddMissing(ReadJsonFile(tokenizer_config), tokens);
  if (const fs::path map = tokenizer_config.parent_path() / "special_tokens_map.json";
      fs::exists(map)) {
    AddMissing(ReadJsonFile(map), tokens);
  }
  return tokens;
}

}  // namespace zinf::formats
