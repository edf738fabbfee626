// OpenAI Batch files through `zinf generate`: 50 chat requests give 50 lines in the Batch API's
// output shape, and a run killed mid-way and resumed still holds every custom_id exactly once,
// each with what an uninterrupted run gives.

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

using Json = nlohmann::json;

std::string ChatTemplateFile() {
  return std::string(ZINF_SOURCE_DIR) + "/examples/chat_template.jinja";
}

// 50 requests: chat ones with per-request settings, three plain completions, one chat request
// the template refuses (an error line), one that asks for another model (a warning).
std::string BatchFile(const std::string& dir) {
  const char* questions[] = {"Who is Lily?", "Where is the park?", "What did Ben see?",
                             "Why was Tom sad?", "What is the fox's key for?"};
  std::string content;
  for (int i = 0; i < 50; ++i) {
    Json line = {{"custom_id", "request-" + std::to_string(i)}, {"method", "POST"}};
    Json body = {{"model", i == 7 ? "gpt-4o-mini" : "model"}, {"max_tokens", 24 + i % 9}};
    if (i % 17 == 5) {
      line["url"] = "/v1/completions";
      body["prompt"] = "Once upon a time";
      body["logprobs"] = 2;
    } else {
      line["url"] = "/v1/chat/completions";
      Json messages = Json::array({{{"role", "system"}, {"content", "Tell a story."}},
                                   {{"role", "user"}, {"content", questions[i % 5]}}});
      if (i == 31) messages.push_back({{"role", "critic"}, {"content", "x"}});
      body["messages"] = messages;
      if (i % 4 == 1) body["temperature"] = 0.8, body["seed"] = i;
      if (i % 10 == 3) body["logprobs"] = true, body["top_logprobs"] = 1;
      if (i % 6 == 2) body["stop"] = Json::array({"park"});
    }
    line["body"] = body;
    content += line.dump() + "\n";
  }
  const std::string path = dir + "/batch.jsonl";
  WriteFile(path, content);
  return path;
}

std::map<std::string, Json> ByCustomId(const std::string& jsonl) {
  std::map<std::string, Json> by_id;
  for (const std::string& line : Lines(jsonl)) {
    Json object = Json::parse(line);
    const std::string id = object.at("custom_id");
    REQUIRE(by_id.count(id) == 0);  // each request exactly once
    // The time a line was written is not part of what the request produced.
    if (object["response"].is_object()) object["response"]["body"].erase("created");
    by_id[id] = object;
  }
  return by_id;
}

void CheckBatchShape(const Json& line) {
  INFO(line.dump());
  REQUIRE(line.is_object());
  CHECK(line.size() == 4);
  CHECK(line["id"].get<std::string>().rfind("batch_req_", 0) == 0);
  CHECK(line["custom_id"].is_string());
  if (!line["error"].is_null()) {
    CHECK(line["response"].is_null());
    CHECK(line["error"]["code"].is_string());
    CHECK(line["error"]["message"].is_string());
    return;
  }
  const Json& response = line["response"];
  CHECK(response["status_code"] == 200);
  CHECK(response["request_id"].is_string());
  const Json& body = response["body"];
  const bool chat = body["object"] == "chat.completion";
  CHECK((chat || body["object"] == "text_completion"));
  CHECK(body["id"].is_string());
  CHECK(body["model"] == "model");
  REQUIRE(body["choices"].size() == 1);
  const Json& choice = body["choices"][0];
  CHECK(choice["index"] == 0);
  CHECK((choice["finish_reason"] == "stop" || choice["finish_reason"] == "length"));
  if (chat) {
    CHECK(choice["message"]["role"] == "assistant");
    CHECK(choice["message"]["content"].is_string());
  } else {
    CHECK(choice["text"].is_string());
  }
  const Json& usage = body["usage"];
  CHECK(usage["total_tokens"] ==
        usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>());
}

}  // namespace

TEST_CASE("an OpenAI Batch file of 50 chat requests: Batch-shaped output, kill and resume",
          "[openai]") {
  const std::string dir = MakeTempDir("cli-openai-batch");
  const std::string model = dir + "/model";  // the directory's name is the model's name
  std::filesystem::create_directory_symlink(ConvertedStories260KDir(), model);
  const std::string batch = BatchFile(dir);
  auto args_for = [&](const std::string& out) {
    return std::vector<std::string>{"generate",
                                    "--model",
                                    model,
                                    "--prompts",
                                    batch,
                                    "--out",
                                    out,
                                    "--chat-template",
                                    ChatTemplateFile(),
                                    "--batch-size",
                                    "4",
                                    "--threads",
                                    "1",
                                    "--ignore-eos"};
  };
  const CliResult full = RunZinf(args_for(dir + "/full.jsonl"));
  INFO(full.err);
  CHECK(full.exit_code == 3);  // one request refused by the template
  CHECK_THAT(full.err, Catch::Contains("name model \"gpt-4o-mini\""));
  const std::string full_text = ReadFile(dir + "/full.jsonl");
  REQUIRE(Lines(full_text).size() == 50);
  for (const std::string& line : Lines(full_text)) CheckBatchShape(Json::parse(line));
  const auto expected = ByCustomId(full_text);
  CHECK(expected.at("request-31")["error"]["message"].get<std::string>().find(
            "stories260K has no critic role") != std::string::npos);
  CHECK(expected.at("request-5")["response"]["body"]["object"] == "text_completion");
  CHECK(expected.at("request-3")["response"]["body"]["choices"][0]["logprobs"]["content"].size() ==
        expected.at("request-3")["response"]["body"]["usage"]["completion_tokens"]);

  // Killed once some lines exist, then resumed.
  const std::string out = dir + "/killed.jsonl";
  InterruptZinfAfterLines(args_for(out), out, 5, SIGKILL);
  const size_t kept = Lines(ReadFile(out)).size();
  CHECK(kept >= 5);
  std::vector<std::string> resume = args_for(out);
  resume.push_back("--resume");
  const CliResult resumed = RunZinf(resume);
  INFO(resumed.err);
  CHECK(resumed.exit_code == 3);
  CHECK(ByCustomId(ReadFile(out)) == expected);
}

TEST_CASE("a Batch file with a duplicate custom_id is refused before any work", "[openai]") {
  const std::string dir = MakeTempDir("cli-openai-duplicate");
  const std::string line =
      R"({"custom_id": "x", "method": "POST", "url": "/v1/completions", "body": {"prompt": "A"}})";
  WriteFile(dir + "/b.jsonl", line + "\n" + line + "\n");
  const CliResult result = RunZinf({"generate", "--model", ConvertedStories260KDir(), "--prompts",
                                    dir + "/b.jsonl", "--out", dir + "/out.jsonl"});
  CHECK(result.exit_code != 0);
  CHECK_THAT(result.err, Catch::Contains("b.jsonl:2: duplicate custom_id \"x\""));
  CHECK(ReadFile(dir + "/out.jsonl").empty());
}

}  // namespace zinf::testing
