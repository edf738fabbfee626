// Chat templates against ../shared/tokenizers/*/chat_golden.jsonl: every conversation rendered
// from the directory's tokenizer_config.json must equal, byte for byte, what Python jinja2 set
// up as transformers' apply_chat_template rendered (or raise where it raised).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model_formats/chat_template.h"
#include "tests/support/chat_golden.h"

namespace zinf::formats {
namespace {

const std::string kSharedDir = std::string(ZINF_SOURCE_DIR) + "/../shared/tokenizers/";

// What the goldens fixed strftime_now at: 2026-07-26 (noon UTC, the same date in any zone).
constexpr std::time_t kGoldenNow = 1785067200;

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Renders every line of `dir`/chat_golden.jsonl and reports each mismatch.
void CheckChatGolden(const std::string& dir) {
  INFO("chat golden data: " << kSharedDir + dir);
  REQUIRE(std::filesystem::exists(kSharedDir + dir + "/chat_golden.jsonl"));
  const auto chat = ChatTemplate::FromTokenizerConfig(kSharedDir + dir + "/tokenizer_config.json");
  REQUIRE(chat.has_value());
  std::ifstream in(kSharedDir + dir + "/chat_golden.jsonl");
  std::string text;
  int lines = 0;
  int bad = 0;
  while (std::getline(in, text)) {
    if (text.empty()) continue;
    ++lines;
    const auto line = nlohmann::ordered_json::parse(text);
    const ChatTemplateInputs inputs = testing::ChatGoldenInputs(line, kGoldenNow);
    const std::string name = line.at("case").get<std::string>();
    std::string rendered;
    std::string error;
    try {
      rendered = chat->Render(inputs);
    } catch (const Error& e) {
      error = e.what();
    }
    if (line.contains("error")) {
      const std::string want = line["error"].get<std::string>();
      if (error.empty() || Lower(error).find(Lower(want)) == std::string::npos) {
        ++bad;
        UNSCOPED_INFO(dir << " " << name << ": expected an error containing '" << want << "', got "
                          << (error.empty() ? "output '" + rendered + "'" : "'" + error + "'"));
      }
    } else if (!error.empty() || rendered != line.at("expected").get<std::string>()) {
      ++bad;
      UNSCOPED_INFO(dir << " " << name << ":\n  got      "
                        << nlohmann::json(error.empty() ? rendered : "ERROR " + error).dump()
                        << "\n  expected " << line["expected"].dump());
    }
  }
  INFO(dir << ": " << lines << " lines, " << bad << " mismatched");
  CHECK(lines > 0);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("llama-3-8b-instruct chat template matches the goldens", "[chat]") {
  CheckChatGolden("llama-3-8b-instruct");
}
TEST_CASE("phi-3-mini chat template matches the goldens", "[chat]") {
  CheckChatGolden("phi-3-mini");
}
TEST_CASE("qwen3 chat template matches the goldens", "[chat]") { CheckChatGolden("qwen3"); }

}  // namespace zinf::formats
