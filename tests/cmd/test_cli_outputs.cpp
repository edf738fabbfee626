// What generate writes, end to end: ids keep their JSON type, logprobs carry token text, a stop
// string is cut from text and tokens alike, and prompts can come from stdin.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

using Catch::Contains;
using Json = nlohmann::json;

std::vector<Json> ParseLines(const std::string& jsonl) {
  std::vector<Json> objects;
  for (const std::string& line : Lines(jsonl)) objects.push_back(Json::parse(line));
  return objects;
}

CliResult Generate(const std::vector<std::string>& extra, const std::string& stdin_text = "") {
  std::vector<std::string> args = {"generate", "--model", ConvertedStories260KDir()};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunZinf(args, stdin_text);
}

// The text `zinf detokenize` gives for `ids` (decoded alone, as a user would).
std::string Detokenize(const Json& ids) {
  const CliResult result =
      RunZinf({"detokenize", "--model", ConvertedStories260KDir()}, Json{{"ids", ids}}.dump());
  REQUIRE(result.exit_code == 0);
  return Json::parse(result.out)["text"].get<std::string>();
}

}  // namespace

TEST_CASE("ids keep their JSON type from the prompt file to the results") {
  const std::string dir = MakeTempDir("cli-ids");
  WriteFile(dir + "/p.jsonl",
            "{\"id\": 7, \"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n"
            "{\"id\": \"8\", \"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n"
            "{\"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n"
            "{\"id\": -12345678901234, \"prompt_ids\": [1, 999999], \"max_new_tokens\": 2}\n");
  const CliResult result = Generate({"--prompts", dir + "/p.jsonl", "--out", dir + "/o.jsonl"});
  INFO(result.err);
  // The last request fails (a token outside the vocabulary): its error line keeps its id's type
  // too. Exit 3 says some requests failed (cmd/exit_codes.h), where generate reports it.
  CHECK((result.exit_code == 0 || result.exit_code == 3));
  REQUIRE(ParseLines(ReadFile(dir + "/o.jsonl")).size() == 4);
  CHECK_THAT(ReadFile(dir + "/o.jsonl"), Contains("{\"id\":7,") && Contains("{\"id\":\"8\",") &&
                                             Contains("{\"id\":3,") &&
                                             Contains("{\"id\":-12345678901234,"));

  // Text prompts: the id is the line number, a number.
  WriteFile(dir + "/p.txt", "Once upon a time\n\nThe sun\n");
  const CliResult text = Generate({"--prompts", dir + "/p.txt", "--max-new-tokens", "2"});
  REQUIRE(text.exit_code == 0);
  const std::vector<Json> text_lines = ParseLines(text.out);
  REQUIRE(text_lines.size() == 2);
  CHECK(text_lines[0]["id"] == 1);
  CHECK(text_lines[1]["id"] == 3);
}

TEST_CASE("resume treats 7 and \"7\" as one id, as the prompt file's duplicate check does") {
  const std::string dir = MakeTempDir("cli-ids-resume");
  const std::string one = "{\"id\": 7, \"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n";
  const std::string two = "{\"id\": \"8\", \"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n";
  const std::string three = "{\"id\": \"x\", \"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n";
  // A numeric id resumes like a string one: the prompt file grows, only the new request runs.
  WriteFile(dir + "/p.jsonl", one + two);
  const std::vector<std::string> run = {"--prompts", dir + "/p.jsonl", "--out", dir + "/o.jsonl"};
  REQUIRE(Generate(run).exit_code == 0);
  WriteFile(dir + "/p.jsonl", one + two + three);
  std::vector<std::string> resume = run;
  resume.push_back("--resume");
  const CliResult resumed = Generate(resume);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  std::vector<Json> lines = ParseLines(ReadFile(dir + "/o.jsonl"));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["id"] == 7);
  CHECK(lines[2]["id"] == "x");

  // Across types: results written as 7 and "8" count requests "7" and 8 as done. (Lines
  // without a prompt digest, as hand-written ones are, need --resume-force.)
  WriteFile(dir + "/q.jsonl", "{\"id\": \"7\", \"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n"
                              "{\"id\": 8, \"prompt_ids\": [1, 403], \"max_new_tokens\": 2}\n" +
                                  three);
  WriteFile(dir + "/q-out.jsonl", "{\"id\":7,\"text\":\"done before\"}\n"
                                  "{\"id\":\"8\",\"text\":\"done before\"}\n");
  const CliResult crossed = Generate(
      {"--prompts", dir + "/q.jsonl", "--out", dir + "/q-out.jsonl", "--resume", "--resume-force"});
  INFO(crossed.err);
  REQUIRE(crossed.exit_code == 0);
  lines = ParseLines(ReadFile(dir + "/q-out.jsonl"));
  REQUIRE(lines.size() == 3);  // only "x" ran
  CHECK(lines[2]["id"] == "x");

  WriteFile(dir + "/dup.jsonl",
            "{\"id\": 7, \"prompt\": \"a\"}\n{\"id\": \"7\", \"prompt\": \"b\"}\n");
  const CliResult duplicate = Generate({"--prompts", dir + "/dup.jsonl"});
  CHECK(duplicate.exit_code != 0);
  CHECK_THAT(duplicate.err, Contains("dup.jsonl:2: duplicate id \"7\""));
}

TEST_CASE("logprobs carry each token's text") {
  const CliResult result = Generate({"--prompts", "-", "--max-new-tokens", "12", "--logprobs", "3"},
                                    "Once upon a time\n");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const Json line = Json::parse(result.out);
  REQUIRE(line["logprobs"].size() == 12);
  std::string joined;
  for (const Json& step : line["logprobs"]) {
    REQUIRE(step["token"].is_string());
    joined += step["token"].get<std::string>();
    REQUIRE(step["top"].size() == 3);
    for (const Json& candidate : step["top"]) CHECK(candidate["token"].is_string());
    // The chosen token of a greedy run is the most likely one, text and all.
    CHECK(step["top"][0]["id"] == step["id"]);
    CHECK(step["top"][0]["token"] == step["token"]);
  }
  // Each token's text as it stands after the ones before it: together, the completion's text.
  CHECK(joined == line["text"]);
  // The documented key order: id, token, logprob.
  CHECK_THAT(result.out, Contains("{\"id\":") && Contains(",\"token\":\""));
  CHECK(result.out.find("\"token\":") < result.out.find("\"logprob\":"));
}

TEST_CASE("a stop string is left out of text, token_ids, completion_tokens and logprobs") {
  // Greedy from "Once upon a time": ", there was a little girl named Lily. ..."
  const std::string prompts =
      "{\"id\": \"space\", \"prompt\": \"Once upon a time\", \"stop\": [\" girl\"]}\n"
      "{\"id\": \"mid\", \"prompt\": \"Once upon a time\", \"stop\": [\"ittle\"]}\n";
  const CliResult result = Generate({"--prompts", "-", "--logprobs", "0"}, prompts);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  for (const Json& line : ParseLines(result.out)) {
    INFO(line.dump());
    CHECK(line["finish_reason"] == "stop");
    CHECK(line["completion_tokens"] == line["token_ids"].size());
    CHECK(line["logprobs"].size() == line["token_ids"].size());
    const std::string text = line["text"];
    const std::string detokenized = Detokenize(line["token_ids"]);
    if (line["id"] == "space") {
      // The stop string starts at a token boundary: text is exactly the tokens' text.
      CHECK(text == ", there was a little");
      CHECK(detokenized == text);
    } else {
      // It starts inside the token " little": text keeps that token's head (" l"), token_ids
      // end before it.
      CHECK(text == ", there was a l");
      CHECK(detokenized == ", there was a");
    }
  }
}

TEST_CASE("--prompts - reads stdin, as text or JSONL by its first character") {
  const CliResult text = Generate({"--prompts", "-", "--max-new-tokens", "3"},
                                  "\xEF\xBB\xBFOnce upon a time\n{not json, a text prompt}\n");
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  const std::vector<Json> text_lines = ParseLines(text.out);
  REQUIRE(text_lines.size() == 2);
  CHECK(text_lines[0]["id"] == 1);
  CHECK(text_lines[0]["token_ids"].size() == 3);

  const CliResult jsonl =
      Generate({"--prompts", "-", "--max-new-tokens", "3"},
               "\n  {\"id\": \"a\", \"prompt\": \"Once upon a time\"}\n{\"id\": 2, \"prompt_ids\": "
               "[1, 403, 407]}\n");
  INFO(jsonl.err);
  REQUIRE(jsonl.exit_code == 0);
  const std::vector<Json> jsonl_lines = ParseLines(jsonl.out);
  REQUIRE(jsonl_lines.size() == 2);
  CHECK(jsonl_lines[0]["id"] == "a");
  CHECK(jsonl_lines[1]["id"] == 2);
  CHECK(jsonl_lines[0]["line"] == 2);  // line numbers count the blank first line

  // Errors name stdin and the line.
  const CliResult bad = Generate({"--prompts", "-"}, "{\"prompt\": \"a\"}\n{\"prompt\": 5}\n");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Contains("stdin:2: \"prompt\" must be a string"));

  // An empty stdin is an empty run, not an error.
  const CliResult empty = Generate({"--prompts", "-"}, "");
  CHECK(empty.exit_code == 0);
  CHECK(empty.out.empty());
}

}  // namespace zinf::testing
