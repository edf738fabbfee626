// Reference data made with Python jinja2 3.1.6 set up as transformers sets it up: the chat
// templates of other model families (tests/data/chat_templates/<family>/) and small feature
// cases (tests/data/jinja_conformance.jsonl). Every file found there must match.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model_formats/chat_template.h"
#include "model_formats/jinja/python_json.h"
#include "model_formats/jinja/template.h"
#include "tests/support/chat_golden.h"

namespace zinf::formats {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kDataDir = fs::path(ZINF_SOURCE_DIR) / "tests" / "data";
constexpr std::time_t kReferenceNow = 1785067200;  // 2026-07-26 12:00 UTC, as the data fixes it

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::vector<Json> ReadLines(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<Json> lines;
  std::string text;
  while (std::getline(in, text)) {
    if (!text.empty()) lines.push_back(Json::parse(text));
  }
  return lines;
}

// Compares one rendering (or its error) with a reference line; returns whether it matched.
bool Matches(const Json& line, const std::string& rendered, const std::string& error,
             const std::string& where) {
  const std::string name = line.at("case").get<std::string>();
  if (line.contains("error")) {
    // jinja2's message, case aside, must appear in ours ("NAME:LINE:COL: <message>").
    const std::string want = line["error"].get<std::string>();
    if (!error.empty() && Lower(error).find(Lower(want)) != std::string::npos) return true;
    UNSCOPED_INFO(where << " " << name << ": expected an error containing '" << want << "', got "
                        << (error.empty() ? "output " + Json(rendered).dump() : "'" + error + "'"));
    return false;
  }
  if (error.empty() && rendered == line.at("expected").get<std::string>()) return true;
  UNSCOPED_INFO(where << " " << name << ":\n  got      "
                      << Json(error.empty() ? rendered : "ERROR " + error).dump() << "\n  expected "
                      << line["expected"].dump());
  return false;
}

}  // namespace

TEST_CASE("jinja conformance cases render as jinja2 renders them", "[jinja]") {
  const fs::path path = kDataDir / "jinja_conformance.jsonl";
  if (!fs::exists(path)) return;  // the reference data is added separately
  int bad = 0;
  const std::vector<Json> lines = ReadLines(path);
  for (const Json& line : lines) {
    std::string rendered;
    std::string error;
    try {
      const jinja::Template tmpl(line.at("template").get<std::string>(), "conformance");
      std::vector<std::pair<std::string, jinja::Value>> variables;
      const Json context = line.value("context", Json::object());
      for (const auto& [key, value] : context.items()) {
        variables.emplace_back(key, jinja::FromJson(value));
      }
      rendered = tmpl.Render(std::move(variables), jinja::RenderLimits{}, kReferenceNow);
    } catch (const Error& e) {
      error = e.what();
    }
    if (!Matches(line, rendered, error, "conformance")) ++bad;
  }
  INFO(lines.size() << " cases, " << bad << " mismatched");
  CHECK(bad == 0);
}

TEST_CASE("chat templates of other families match their references", "[chat]") {
  const fs::path root = kDataDir / "chat_templates";
  if (!fs::exists(root)) return;
  std::vector<fs::path> families;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "chat_golden.jsonl")) families.push_back(entry.path());
  }
  std::sort(families.begin(), families.end());
  for (const fs::path& family : families) {
    const std::string name = family.filename().string();
    int bad = 0;
    const std::vector<Json> lines = ReadLines(family / "chat_golden.jsonl");
    std::optional<ChatTemplate> plain;
    std::optional<ChatTemplate> with_tools;
    REQUIRE_NOTHROW(plain = ChatTemplate::FromTokenizerConfig(family / "tokenizer_config.json"));
    REQUIRE(plain.has_value());
    with_tools = ChatTemplate::FromTokenizerConfig(family / "tokenizer_config.json", true);
    for (const Json& line : lines) {
      const ChatTemplateInputs inputs = testing::ChatGoldenInputs(line, kReferenceNow);
      std::string rendered;
      std::string error;
      try {
        rendered = (inputs.tools.is_null() ? *plain : *with_tools).Render(inputs);
      } catch (const Error& e) {
        error = e.what();
      }
      if (!Matches(line, rendered, error, name)) ++bad;
    }
    INFO(name << ": " << lines.size() << " cases, " << bad << " mismatched");
    CHECK(bad == 0);
  }
}

}  // namespace zinf::formats
