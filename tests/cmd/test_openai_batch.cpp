// Tests for chat prompts and OpenAI Batch files: cmd/prompt_file (reading), cmd/openai_batch
// (the mapping) and cmd/results_file (Batch-shaped lines, resume by custom_id).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cmd/prompt_file.h"
#include "cmd/results_file.h"
#include "engine/error.h"

namespace zinf::cli {
namespace {

std::vector<PromptEntry> Parse(std::string_view content) {
  return ParsePrompts(content, "p.jsonl", PromptFileFormat::kJsonl);
}

std::string ErrorOf(std::string_view content) {
  try {
    Parse(content);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

std::string BatchLine(std::string_view custom_id, std::string_view url, std::string_view body) {
  return fmt::format(R"({{"custom_id": "{}", "method": "POST", "url": "{}", "body": {}}})",
                     custom_id, url, body);
}

constexpr std::string_view kChat = "/v1/chat/completions";
constexpr std::string_view kCompletions = "/v1/completions";

}  // namespace

TEST_CASE("a JSONL line may carry messages, tools and chat_template_kwargs", "[prompts][chat]") {
  const auto entries = Parse(
      R"({"id": "c1", "messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}], "chat_template_kwargs": {"enable_thinking": false}, "max_new_tokens": 5})"
      "\n");
  REQUIRE(entries.size() == 1);
  const PromptEntry& entry = entries[0];
  REQUIRE(entry.chat);
  CHECK_FALSE(entry.text);
  CHECK_FALSE(entry.ids);
  CHECK(entry.chat->messages[0]["content"] == "Hi");
  CHECK(entry.chat->kwargs["enable_thinking"] == false);
  // Key order as given: templates print tools with tojson.
  CHECK(entry.chat->tools[0]["function"]["parameters"].dump() == R"({"z":1,"a":2})");
  CHECK(*entry.overrides.max_new_tokens == 5);
  CHECK_FALSE(entry.openai);
}

TEST_CASE("bad chat lines name the line and what is wrong", "[prompts][chat]") {
  CHECK_THAT(ErrorOf(R"({"messages": ["hi"]})"),
             Catch::Contains("p.jsonl:1: messages[0] must be an object"));
  CHECK_THAT(ErrorOf("\n"
                     R"({"messages": []})"),
             Catch::Contains("p.jsonl:2: \"messages\" must be a non-empty array"));
  CHECK_THAT(ErrorOf(R"({"messages": [{"content": "x"}]})"),
             Catch::Contains("messages[0] needs a string \"role\""));
  CHECK_THAT(ErrorOf(R"({"messages": [{"role": "user", "content": 5}]})"),
             Catch::Contains("messages[0].content must be a string, null or an array"));
  CHECK_THAT(ErrorOf(R"({"prompt": "x", "messages": [{"role": "user", "content": "x"}]})"),
             Catch::Contains("exactly one of \"prompt\""));
  CHECK_THAT(ErrorOf(R"({"prompt": "x", "tools": []})"),
             Catch::Contains("\"tools\" goes with \"messages\""));
  CHECK_THAT(ErrorOf(R"({"messages": [{"role": "user"}], "tools": {"a": 1}})"),
             Catch::Contains("\"tools\" must be an array"));
  CHECK_THAT(ErrorOf(R"({"messages": [{"role": "user"}], "chat_template_kwargs": [1]})"),
             Catch::Contains("\"chat_template_kwargs\" must be an object"));
}

TEST_CASE("an OpenAI Batch file is detected by its first line and mapped to requests",
          "[prompts][openai]") {
  const std::string content =
      BatchLine(
          "req-1", kChat,
          R"({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}], "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "seed": 3, "stop": "END", "logprobs": true, "top_logprobs": 2})") +
      "\n\n" +
      BatchLine("req-2", kCompletions,
                R"({"prompt": "Once upon", "max_tokens": 9, "logprobs": 1, "stop": ["a", "b"]})") +
      "\n" + BatchLine("req-3", kCompletions, R"({"prompt": [[1, 2, 3]]})") + "\n";
  const auto entries = Parse(content);
  REQUIRE(entries.size() == 3);
  const PromptEntry& chat = entries[0];
  CHECK(chat.id == "req-1");
  CHECK_FALSE(chat.id_is_number);
  REQUIRE(chat.openai);
  CHECK(chat.openai->endpoint == OpenAiEndpoint::kChatCompletions);
  CHECK(chat.openai->model == "gpt-4o-mini");
  REQUIRE(chat.chat);
  CHECK(*chat.overrides.max_new_tokens == 7);
  CHECK(*chat.overrides.temperature == 0.5);
  CHECK(*chat.overrides.top_p == 0.9);
  CHECK(*chat.overrides.seed == 3);
  CHECK(*chat.overrides.stop == std::vector<std::string>{"END"});
  CHECK(*chat.overrides.logprobs == 2);
  const PromptEntry& text = entries[1];
  CHECK(text.line == 3);
  CHECK(text.openai->endpoint == OpenAiEndpoint::kCompletions);
  CHECK(*text.text == "Once upon");
  CHECK(*text.overrides.max_new_tokens == 9);
  CHECK(*text.overrides.logprobs == 1);
  CHECK(*entries[2].ids == std::vector<TokenId>{1, 2, 3});
}

TEST_CASE("bad Batch lines are clear errors naming the line", "[prompts][openai]") {
  const std::string good = BatchLine("a", kChat, R"({"messages": [{"role": "user"}]})") + "\n";
  CHECK_THAT(
      ErrorOf(good + R"({"method": "POST", "url": "/v1/completions", "body": {"prompt": "x"}})"),
      Catch::Contains("p.jsonl:2: \"custom_id\" is missing"));
  CHECK_THAT(ErrorOf(good + BatchLine("b", "/v1/embeddings", "{}")),
             Catch::Contains("p.jsonl:2: \"url\" \"/v1/embeddings\" is not supported"));
  CHECK_THAT(ErrorOf(good + good), Catch::Contains("p.jsonl:2: duplicate custom_id \"a\""));
  CHECK_THAT(ErrorOf(BatchLine("a", kChat, R"({"messages": [{"role": "user"}], "n": 2})")),
             Catch::Contains("body.n = 2 is not supported"));
  CHECK_THAT(
      ErrorOf(BatchLine("a", kChat, R"({"messages": [{"role": "user"}], "response_format": {}})")),
      Catch::Contains("body.response_format is not a field zinf supports"));
  CHECK_THAT(ErrorOf(BatchLine("a", kChat, R"({"messages": "hi"})")),
             Catch::Contains("in body: \"messages\" must be a non-empty array"));
  CHECK_THAT(ErrorOf(BatchLine("a", kChat, R"({"messages": [7]})")),
             Catch::Contains("messages[0] must be an object"));
  CHECK_THAT(ErrorOf(BatchLine("a", kChat, R"({"messages": [{"role": "user"}], "max_tokens": 0})")),
             Catch::Contains("max_new_tokens"));
  CHECK_THAT(
      ErrorOf(BatchLine("a", kChat, R"({"messages": [{"role": "user"}], "top_logprobs": 2})")),
      Catch::Contains("body.top_logprobs needs body.logprobs = true"));
  CHECK_THAT(ErrorOf(BatchLine("a", kCompletions, R"({"prompt": ["x", "y"]})")),
             Catch::Contains("one prompt per request"));
  CHECK_THAT(
      ErrorOf(R"({"custom_id": "a", "method": "GET", "url": "/v1/completions", "body": {}})"),
      Catch::Contains("\"method\" must be \"POST\""));
  // A zinf line after a Batch first line is not a Batch request; the reverse names the key.
  CHECK_THAT(ErrorOf(good + R"({"prompt": "x"})"),
             Catch::Contains("p.jsonl:2: unknown key \"prompt\" in an OpenAI Batch request"));
  CHECK_THAT(ErrorOf(good + R"({"method": "POST"})"), Catch::Contains("\"custom_id\" is missing"));
  CHECK_THAT(ErrorOf(R"({"prompt": "x"})"
                     "\n" +
                     good),
             Catch::Contains("p.jsonl:2: unknown key \"custom_id\""));
}

TEST_CASE("Batch results have the Batch API's shape and resume by custom_id", "[output][openai]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("zinf_test_batch_{}.jsonl", ::getpid()))
          .string();
  std::filesystem::remove(path);
  OpenAiRequest chat{OpenAiEndpoint::kChatCompletions, "m"};
  OpenAiRequest text{OpenAiEndpoint::kCompletions, ""};
  {
    ResultsFile output(path, false);
    Completion completion;
    completion.id = "c-1";
    completion.text = "Hello";
    completion.token_ids = {5, 6};
    completion.prompt_tokens = 4;
    completion.finish_reason = FinishReason::kEos;
    completion.logprobs = {{{5, -0.5f, "Hel"}, {{5, -0.5f, "Hel"}, {9, -1.5f, "He"}}},
                           {{6, -0.25f, "lo"}, {}}};
    output.Append(completion, AppendExtras{1, 0xabcdef, &chat, "stories"});
    completion.id = "c-2";
    completion.finish_reason = FinishReason::kLength;
    completion.logprobs.clear();
    output.Append(completion, AppendExtras{2, 0x1234, &text, "stories"});
    output.AppendError({"c-3"}, 3, "chat template: roles must alternate", 0x99, &chat);
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  REQUIRE(lines.size() == 3);
  const nlohmann::json& first = lines[0];
  CHECK(first["id"] == "batch_req_0000000000abcdef");
  CHECK(first["custom_id"] == "c-1");
  CHECK(first["error"].is_null());
  CHECK(first["response"]["status_code"] == 200);
  const nlohmann::json& body = first["response"]["body"];
  CHECK(body["object"] == "chat.completion");
  CHECK(body["model"] == "stories");
  CHECK(body["choices"][0]["message"]["role"] == "assistant");
  CHECK(body["choices"][0]["message"]["content"] == "Hello");
  CHECK(body["choices"][0]["finish_reason"] == "stop");  // the model's end-of-turn token
  CHECK(body["usage"] ==
        nlohmann::json{{"completion_tokens", 2}, {"prompt_tokens", 4}, {"total_tokens", 6}});
  const nlohmann::json& logprob = body["choices"][0]["logprobs"]["content"][0];
  CHECK(logprob["token"] == "Hel");
  CHECK(logprob["logprob"] == -0.5);
  CHECK(logprob["bytes"] == nlohmann::json{72, 101, 108});
  CHECK(logprob["top_logprobs"][1]["token"] == "He");
  const nlohmann::json& second = lines[1]["response"]["body"];
  CHECK(second["object"] == "text_completion");
  CHECK(second["choices"][0]["text"] == "Hello");
  CHECK(second["choices"][0]["finish_reason"] == "length");
  CHECK(second["choices"][0]["logprobs"].is_null());
  CHECK(lines[2]["response"].is_null());
  CHECK(lines[2]["error"]["message"] == "chat template: roles must alternate");

  ResultsFile resumed(path, true);
  CHECK(resumed.done_ids() == std::unordered_set<std::string>{"c-1", "c-2", "c-3"});
  CHECK(resumed.done_digests().at("c-1") == 0xabcdef);
  CHECK(resumed.done_digests().at("c-3") == 0x99);
  CHECK(resumed.done_errors() == 1);
  std::filesystem::remove(path);
}

}  // namespace zinf::cli
