// Python's printing of values (str, repr, json.dumps) and the ChatTemplate API around the engine:
// picking a template from tokenizer_config.json, special tokens, template files, concurrent
// rendering and its speed.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/error.h"
#include "model_formats/chat_template.h"
#include "model_formats/jinja/python_json.h"
#include "model_formats/jinja/python_str.h"

namespace zinf::formats {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

fs::path WriteFile(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "zinf_jinja_values";
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

}  // namespace

TEST_CASE("jinja prints floats as Python's repr", "[jinja]") {
  using jinja::FloatRepr;
  CHECK(FloatRepr(1.0) == "1.0");
  CHECK(FloatRepr(0.1) == "0.1");
  CHECK(FloatRepr(0.1 + 0.2) == "0.30000000000000004");
  CHECK(FloatRepr(1e20) == "1e+20");
  CHECK(FloatRepr(1e16) == "1e+16");
  CHECK(FloatRepr(1e15) == "1000000000000000.0");
  CHECK(FloatRepr(1e-5) == "1e-05");
  CHECK(FloatRepr(0.0001) == "0.0001");
  CHECK(FloatRepr(-1.5e-7) == "-1.5e-07");
  CHECK(FloatRepr(-0.0) == "-0.0");
  CHECK(FloatRepr(1.0 / 3) == "0.3333333333333333");
  CHECK(FloatRepr(123456789.125) == "123456789.125");
  CHECK(FloatRepr(1.7976931348623157e308) == "1.7976931348623157e+308");
  CHECK(FloatRepr(5e-324) == "5e-324");
}

TEST_CASE("jinja quotes strings as Python's repr", "[jinja]") {
  using jinja::StringRepr;
  CHECK(StringRepr("a") == "'a'");
  CHECK(StringRepr("it's") == "\"it's\"");
  CHECK(StringRepr("both ' \"") == "'both \\' \"'");
  CHECK(StringRepr("\t\n\r\\") == "'\\t\\n\\r\\\\'");
  CHECK(StringRepr("\x01\x7f") == "'\\x01\\x7f'");
  CHECK(StringRepr("é🌍") == "'é🌍'");
  CHECK(StringRepr("\xc2\xa0\xe2\x80\xa8") == "'\\xa0\\u2028'");  // NBSP, line separator
  const jinja::Value list = jinja::FromJson(Json::parse(R"(["a", 1, null, true, 1.5, {"k": []}])"));
  CHECK(jinja::Str(list) == "['a', 1, None, True, 1.5, {'k': []}]");
}

TEST_CASE("jinja tojson is json.dumps with ensure_ascii=False", "[jinja]") {
  const jinja::Value value =
      jinja::FromJson(Json::parse(R"({"b": [1, 2.0, "é\n\u0001<>&'"], "a": {}, "c": []})"));
  jinja::JsonDumpOptions options;
  CHECK(jinja::DumpJson(value, options) == R"({"b": [1, 2.0, "é\n\u0001<>&'"], "a": {}, "c": []})");
  options.indent = "  ";
  options.sort_keys = true;
  CHECK(jinja::DumpJson(value, options) == "{\n  \"a\": {},\n  \"b\": [\n    1,\n    2.0,\n    "
                                           "\"é\\n\\u0001<>&'\"\n  ],\n  \"c\": []\n}");
  options = {};
  options.ensure_ascii = true;
  CHECK(jinja::DumpJson(jinja::Value("é🌍"), options) == R"("\u00e9\ud83c\udf0d")");
}

TEST_CASE("chat template from a tokenizer_config.json", "[chat]") {
  const Json config = {
      {"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
      {"eos_token", "</s>"},
      {"unk_token", nullptr},
      {"chat_template",
       Json::array(
           {{{"name", "default"}, {"template", "D{{ bos_token }}{{ unk_token is defined }}"}},
            {{"name", "tool_use"}, {"template", "T{{ tools|length }}{{ eos_token }}"}}})}};
  const fs::path path = WriteFile("tokenizer_config.json", config.dump());
  const auto plain = ChatTemplate::FromTokenizerConfig(path);
  REQUIRE(plain.has_value());
  ChatTemplateInputs inputs;
  CHECK(plain->Render(inputs) == "D<s>False");
  const auto tools = ChatTemplate::FromTokenizerConfig(path, true);
  REQUIRE(tools.has_value());
  inputs.tools = Json::array({{{"type", "function"}}});
  CHECK(tools->Render(inputs) == "T1</s>");
  CHECK_THAT(tools->name(), Catch::Matchers::Contains("tool_use"));

  CHECK_FALSE(ChatTemplate::FromTokenizerConfig(WriteFile("none.json", R"({"eos_token": "x"})")));
  CHECK_THROWS_WITH(
      ChatTemplate::FromTokenizerConfig(WriteFile("bad.json", R"({"chat_template": 5})")),
      Catch::Matchers::Contains("bad.json chat_template"));
  CHECK_THROWS_WITH(ChatTemplate::FromTokenizerConfig(
                        WriteFile("syntax.json", R"({"chat_template": "{% if %}"})")),
                    Catch::Matchers::Contains("syntax.json chat_template:1:7:"));

  const fs::path file =
      WriteFile("chat_template.jinja", "{{ bos_token }}{{ messages[0].content }}\n");
  const ChatTemplate from_file = ChatTemplate::FromFile(file, path);
  inputs.messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
  CHECK(from_file.Render(inputs) == "<s>hi");
}

TEST_CASE("chat template variables and kwargs", "[chat]") {
  const ChatTemplate chat(
      "{{ add_generation_prompt }} {{ tools }} {{ documents }} {{ enable_thinking }} "
      "{{ bos_token }} {{ strftime_now('%d %b %Y') }}",
      "t", Json{{"bos_token", "<s>"}});
  ChatTemplateInputs inputs;
  inputs.kwargs = {{"enable_thinking", false}, {"bos_token", "<override>"}};
  inputs.now = 1785067200;  // 2026-07-26 12:00 UTC
  CHECK(chat.Render(inputs) == "True None None False <override> 26 Jul 2026");
}

TEST_CASE("chat templates render concurrently with the same result", "[chat]") {
  const std::string dir = std::string(ZINF_SOURCE_DIR) + "/tests/data/chat_templates/llama-3.1";
  if (!fs::exists(dir + "/tokenizer_config.json")) return;
  const auto chat = ChatTemplate::FromTokenizerConfig(dir + "/tokenizer_config.json");
  REQUIRE(chat.has_value());
  ChatTemplateInputs inputs;
  inputs.now = 1785067200;
  for (int i = 0; i < 4; ++i) {
    inputs.messages.push_back({{"role", "user"}, {"content", "Question " + std::to_string(i)}});
    inputs.messages.push_back({{"role", "assistant"}, {"content", "Answer " + std::to_string(i)}});
  }
  const std::string expected = chat->Render(inputs);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (chat->Render(inputs) != expected) ++mismatches;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(mismatches == 0);
}

}  // namespace zinf::formats
