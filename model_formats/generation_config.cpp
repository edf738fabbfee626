// Reading generation_config.json's stop tokens; see generation_config.h.
#include "model_formats/generation_config.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model_formats/atomic_output_file.h"
#include "model_formats/json_depth.h"

namespace zinf::formats {

std::vector<int> GenerationConfigEosIds(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return {};
  const std::string text = ReadTextFile(file.string());
  if (const auto offset = FindJsonNestingOver(text)) {
    Fail("{}: JSON nested deeper than {} levels at byte {}", file.string(), kMaxJsonDepth, *offset);
  }
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    Fail("{}: malformed JSON: {}", file.string(), error.what());
  }
  if (!config.is_object()) Fail("{}: expected a JSON object", file.string());
  const auto field = config.find("eos_token_id");
  if (field == config.end() || field->is_null()) return {};
  std::vector<int> ids;
  for (const nlohmann::json& id : field->is_array() ? *field : nlohmann::json::array({*field})) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() > std::numeric_limits<int>::max()) {
      Fail("{}: eos_token_id must be a token id or a list of them, got {}", file.string(),
           id.dump());
    }
    ids.push_back(id.get<int>());
  }
  return ids;
}

void AppendMissingIds(const std::vector<int>& more, std::vector<int>& ids) {
  for (int id : more) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
}

}  // namespace zinf::formats
