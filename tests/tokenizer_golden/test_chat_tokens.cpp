// A rendered chat prompt tokenized as generate tokenizes it (no special tokens added): the turn
// markers the template wrote become their single special ids, and BOS appears exactly once.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_formats/chat_template.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "tests/support/chat_golden.h"

namespace zinf::formats {
namespace {

const std::string kSharedDir = std::string(ZINF_SOURCE_DIR) + "/../shared/tokenizers/";

// The rendering of the golden case `name` of model `dir`, tokenized without and with specials.
std::pair<std::vector<TokenId>, std::vector<TokenId>> RenderedIds(const std::string& dir,
                                                                  const std::string& name) {
  const auto chat = ChatTemplate::FromTokenizerConfig(kSharedDir + dir + "/tokenizer_config.json");
  REQUIRE(chat);
  std::ifstream in(kSharedDir + dir + "/chat_golden.jsonl");
  for (std::string text; std::getline(in, text);) {
    const auto line = nlohmann::ordered_json::parse(text);
    if (line["case"] != name) continue;
    const std::string prompt = chat->Render(testing::ChatGoldenInputs(line, 0));
    REQUIRE(prompt == line["expected"].get<std::string>());
    const auto tokenizer = LoadHfJsonTokenizer(kSharedDir + dir + "/tokenizer.json");
    return {tokenizer->Encode(prompt, false), tokenizer->Encode(prompt, true)};
  }
  FAIL("no case " << name << " in " << dir);
  return {};
}

int64_t Count(const std::vector<TokenId>& ids, TokenId id) {
  return std::count(ids.begin(), ids.end(), id);
}

}  // namespace

TEST_CASE("Llama-3 chat prompts hold one BOS and whole turn markers", "[chat]") {
  const auto [ids, with_special] = RenderedIds("llama-3-8b-instruct", "system-user");
  REQUIRE(!ids.empty());
  CHECK(ids[0] == 128000);  // <|begin_of_text|>, written by the template
  CHECK(Count(ids, 128000) == 1);
  CHECK(Count(ids, 128006) == 3);           // <|start_header_id|>: system, user, assistant
  CHECK(Count(ids, 128009) == 2);           // <|eot_id|> after system and user
  CHECK(Count(with_special, 128000) == 2);  // what adding specials again would have done
}

TEST_CASE("Qwen3 chat prompts hold whole <|im_start|> and <|im_end|> tokens", "[chat]") {
  const auto [ids, with_special] = RenderedIds("qwen3", "multi-turn");
  CHECK(Count(ids, 151644) == 4);  // <|im_start|>: user, assistant, user, and the generation prompt
  CHECK(Count(ids, 151645) == 3);  // <|im_end|>
  CHECK(ids == with_special);      // Qwen adds no BOS: the same either way
}

}  // namespace zinf::formats
