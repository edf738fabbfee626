// Chat prompts end to end through the binary: a template carried over by convert, "messages"
// requests rendered and generated, template errors as error lines, `zinf chat-template`, and the
// stop tokens of generation_config.json.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string ChatTemplateFile() {
  return std::string(ZINF_SOURCE_DIR) + "/examples/chat_template.jinja";
}

// stories260K as a Hugging Face directory whose tokenizer_config.json holds the test template
// and whose generation_config.json names a second stop token, converted.
const std::string& ChatStoriesDir() {
  static const std::string dir = [] {
    const std::string root = MakeTempDir("cli-chat-stories");
    const fs::path hf = fs::path(root) / "hf";
    fs::copy(fs::path(ZINF_SOURCE_DIR) / "models/stories260K", hf, fs::copy_options::recursive);
    Json config = Json::parse(ReadFile((hf / "tokenizer_config.json").string()));
    config["chat_template"] = ReadFile(ChatTemplateFile());
    WriteFile((hf / "tokenizer_config.json").string(), config.dump(2));
    WriteFile((hf / "generation_config.json").string(), R"({"eos_token_id": [2, 13]})");
    const std::string out = root + "/model";
    const CliResult result = RunZinf({"convert", hf.string(), out});
    if (result.exit_code != 0) throw std::runtime_error("convert failed: " + result.err);
    return out;
  }();
  return dir;
}

Json Messages(const std::string& question) {
  return Json::array({{{"role", "system"}, {"content", "Tell a story."}},
                      {{"role", "user"}, {"content", question}}});
}

std::map<std::string, Json> ById(const std::string& jsonl, const char* key = "id") {
  std::map<std::string, Json> by_id;
  for (const std::string& line : Lines(jsonl)) {
    const Json object = Json::parse(line);
    const std::string id = IdKey(object[key]);
    REQUIRE(by_id.count(id) == 0);  // each request exactly once
    by_id[id] = object;
  }
  return by_id;
}

}  // namespace

TEST_CASE("convert carries the chat template and generation_config's stop tokens", "[chat]") {
  const std::string model = ChatStoriesDir();
  CHECK(fs::exists(model + "/tokenizer_config.json"));
  CHECK(fs::exists(model + "/generation_config.json"));
  const Json manifest = Json::parse(ReadFile(model + "/manifest.json"));
  INFO(manifest.dump());
  CHECK(manifest["config"]["eos_token_ids"] == Json::array({2, 13}));
}

TEST_CASE("messages requests are rendered with the model's template and generated", "[chat]") {
  const std::string dir = MakeTempDir("cli-chat-generate");
  const std::string model = ChatStoriesDir();
  Json chat = {{"id", "chat"}, {"messages", Messages("Who is Lily?")}};
  Json tool = {{"id", "tool"}, {"messages", Json::array({{{"role", "tool"}, {"content", "42"}}})}};
  Json plain = {{"id", "plain"}, {"prompt", "Once upon a time"}};
  WriteFile(dir + "/p.jsonl", chat.dump() + "\n" + tool.dump() + "\n" + plain.dump() + "\n");
  const std::vector<std::string> common = {"--max-new-tokens", "12", "--ignore-eos"};
  std::vector<std::string> args = {
      "generate", "--model", model, "--prompts", dir + "/p.jsonl", "--out", dir + "/out.jsonl"};
  args.insert(args.end(), common.begin(), common.end());
  const CliResult result = RunZinf(args);
  INFO(result.err);
  CHECK(result.exit_code == 3);  // finished, with one request failed
  const auto by_id = ById(ReadFile(dir + "/out.jsonl"));
  REQUIRE(by_id.size() == 3);
  const std::string error = by_id.at("tool")["error"];
  CHECK_THAT(error, Catch::StartsWith("chat template: ") &&
                        Catch::Contains("tokenizer_config.json") &&
                        Catch::EndsWith(": stories260K has no tool role"));
  CHECK(by_id.at("plain")["finish_reason"] == "length");

  // The same request as the prompt `zinf chat-template` renders, tokenized without BOS, given as
  // ids: the same tokens out.
  const CliResult rendered = RunZinf({"chat-template", "--model", model},
                                     Json{{"messages", Messages("Who is Lily?")}}.dump() + "\n");
  REQUIRE(rendered.exit_code == 0);
  const std::string text = Json::parse(rendered.out)["text"];
  CHECK(text == "Tell a story.\n\nQuestion: Who is Lily?\nAnswer:");
  const CliResult ids =
      RunZinf({"tokenize", "--model", model, "--no-special"}, Json{{"text", text}}.dump() + "\n");
  REQUIRE(ids.exit_code == 0);
  WriteFile(dir + "/ids.jsonl",
            Json{{"id", "chat"}, {"prompt_ids", Json::parse(ids.out)["ids"]}}.dump() + "\n");
  args = {"generate",
          "--model",
          model,
          "--prompts",
          dir + "/ids.jsonl",
          "--out",
          dir + "/ids_out.jsonl"};
  args.insert(args.end(), common.begin(), common.end());
  REQUIRE(RunZinf(args).exit_code == 0);
  const Json by_ids = ById(ReadFile(dir + "/ids_out.jsonl")).at("chat");
  CHECK(by_id.at("chat")["token_ids"] == by_ids["token_ids"]);
  CHECK(by_id.at("chat")["prompt_tokens"] == by_ids["prompt_tokens"]);
}

TEST_CASE("--chat-template names a file, or none; messages without a template fail up front",
          "[chat]") {
  const std::string dir = MakeTempDir("cli-chat-choice");
  WriteFile(dir + "/p.jsonl", Json{{"messages", Messages("Hi")}}.dump() + "\n");
  const std::vector<std::string> base = {"generate", "--prompts", dir + "/p.jsonl",
                                         "--max-new-tokens", "3"};
  auto run = [&](const std::string& model, std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--model", model});
    args.insert(args.end(), extra.begin(), extra.end());
    return RunZinf(args);
  };
  // The bundled checkpoint has no template of its own.
  CliResult result = run(ConvertedStories260KDir(), {"--out", dir + "/a.jsonl"});
  CHECK(result.exit_code != 0);
  CHECK_THAT(result.err,
             Catch::Contains("p.jsonl:1: a \"messages\" request needs a chat template"));
  CHECK(ReadFile(dir + "/a.jsonl").empty());
  result = run(ConvertedStories260KDir(),
               {"--out", dir + "/b.jsonl", "--chat-template", ChatTemplateFile()});
  INFO(result.err);
  CHECK(result.exit_code == 0);
  CHECK(Lines(ReadFile(dir + "/b.jsonl")).size() == 1);
  result = run(ChatStoriesDir(), {"--out", dir + "/c.jsonl", "--chat-template", "none"});
  CHECK(result.exit_code != 0);
  CHECK_THAT(result.err, Catch::Contains("needs a chat template"));
}

TEST_CASE("a malformed template or an unknown filter fails before any work, naming the place",
          "[chat]") {
  const std::string dir = MakeTempDir("cli-chat-bad-template");
  WriteFile(dir + "/p.jsonl", Json{{"messages", Messages("Hi")}}.dump() + "\n");
  WriteFile(dir + "/unclosed.jinja", "{% for m in messages %}{{ m.content }}\n");
  WriteFile(dir + "/filter.jinja", "{{ messages | shout }}");
  for (const char* name : {"unclosed", "filter"}) {
    const std::string file = dir + "/" + name + ".jinja";
    const CliResult result =
        RunZinf({"generate", "--model", ConvertedStories260KDir(), "--prompts", dir + "/p.jsonl",
                 "--out", dir + "/" + name + ".out", "--chat-template", file});
    INFO(result.err);
    CHECK(result.exit_code != 0);
    CHECK_THAT(result.err, Catch::Contains(file + ":1:"));
  }
}

TEST_CASE("chat-template renders each stdin line or says what is wrong with it", "[chat]") {
  const std::string input =
      Json{{"messages", Messages("Hi")}, {"add_generation_prompt", false}}.dump() + "\n" +
      "{\"messages\": [5]}\n" + "not json\n" +
      Json{{"messages", {{{"role", "tool"}, {"content", ""}}}}}.dump() + "\n";
  const CliResult result = RunZinf({"chat-template", "--model", ChatStoriesDir()}, input);
  CHECK(result.exit_code == 3);
  const std::vector<std::string> lines = Lines(result.out);
  REQUIRE(lines.size() == 4);
  CHECK(Json::parse(lines[0]) == Json{{"text", "Tell a story.\n\nQuestion: Hi\n"}});
  CHECK_THAT(Json::parse(lines[1])["error"].get<std::string>(),
             Catch::Contains("stdin:2: messages[0] must be an object"));
  CHECK_THAT(Json::parse(lines[2])["error"].get<std::string>(),
             Catch::Contains("stdin:3: not valid JSON"));
  CHECK_THAT(Json::parse(lines[3])["error"].get<std::string>(),
             Catch::Contains("stories260K has no tool role"));
}

}  // namespace zinf::testing
