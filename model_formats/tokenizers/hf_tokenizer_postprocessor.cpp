// Post-processors reduced to a prefix and suffix of special ids around the
// single sequence.
#include "model_formats/tokenizers/hf_tokenizer_postprocessor.h"

#include <fmt/format.h>

#include "engine/error.h"
#include "model_formats/tokenizers/hf_tokenizer_bpe.h"

namespace zinf::formats::hf {
namespace {

void ParseTemplate(const nlohmann::json &json, const std::string &file, SpecialTemplate &out) {
  const nlohmann::json &special_tokens = json.value("special_tokens", nlohmann::json::object());
  bool seen_sequence = false;
  for (const nlohmann::json &item : json.at("single")) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken")) {
      Fail("tokenizer '{}': TemplateProcessing item {} is neither SpecialToken "
           "nor Sequence",
           file, item.dump());
    }
    const std::string name = item.at("SpecialToken").at("id").get<std::string>();
    if (!special_tokens.contains(name)) {
      Fail("tokenizer '{}': TemplateProcessing uses '{}' but its "
           "special_tokens lack it",
           file, name);
    }
    std::vector<TokenId> &side = seen_sequence ? out.suffix : out.prefix;
    for (const nlohmann::json &id : special_tokens.at(name).at("ids")) {
      side.push_back(
          ParseTokenId(id, file, fmt::format("TemplateProcessing special token '{}'", name)));
    }
  }
}

}  // namespace

SpecialTemplate ParsePostProcessor(const nlohmann::json &json, const std::string &file) {
  SpecialTemplate result;
  if (json.is_null()) return result;
  const std::string type = json.at("type").get<std::string>();
  if (type == "ByteLevel") return result;  // only trims offsets, which zinf does not report
  if (type == "TemplateProcessing") {
    ParseTemplate(json, file, result);
    return result;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {  // cls $A sep
    result.prefix.push_back(ParseTokenId(json.at("cls").at(1), file, type + " cls token"));
    result.suffix.push_back(ParseTokenId(json.at("sep").at(1), file, type + " sep token"));
    return result;
  }
  if (type == "Sequence") {
    for (const nlohmann::json &step : json.at("processors")) {
      const SpecialTemplate inner = ParsePostProcessor(step, file);
      // Each processor wraps what the previous ones produced.
      result.prefix.insert(result.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
      result.suffix.insert(result.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return result;
  }
  Fail("tokenizer '{}': unknown post_processor type '{}' (zinf supports "
       "TemplateProcessing, "
       "ByteLevel, RobertaProcessing, BertProcessing, Sequence)",
       file, type);
}

}  // namespace zinf::formats::hf
