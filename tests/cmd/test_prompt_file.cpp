// Tests for cmd/prompt_file: text and JSONL prompts, overrides, bad lines, invalid UTF-8.
#include <malloc.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cmd/prompt_file.h"

namespace zinf::cli {
namespace {

// A file under the system temp folder, removed when the test ends.
class TempFile {
 public:
  TempFile(std::string_view extension, std::string_view content) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("zinf_test_prompts_{}_{}{}", ::getpid(), counter++, extension);
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string ErrorOf(std::string_view content, PromptFileFormat format) {
  try {
    ParsePrompts(content, "p.jsonl", format);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST_CASE("text prompts: one a line, empty lines skipped but counted, CR stripped", "[prompts]") {
  TempFile file(".txt", "first prompt\r\n\nthird prompt\n\r\n  \nlast without newline");
  const auto entries = ReadPromptFile(file.path());
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].id == "1");
  CHECK(*entries[0].text == "first prompt");
  CHECK(entries[1].line == 3);
  CHECK(entries[1].id == "3");
  CHECK(*entries[1].text == "third prompt");
  CHECK(entries[2].id == "5");
  CHECK(*entries[2].text == "  ");
  CHECK(entries[3].line == 6);
  CHECK(*entries[3].text == "last without newline");
  for (const auto& entry : entries) {
    CHECK(entry.error.empty());
    CHECK_FALSE(entry.ids.has_value());
  }
}

TEST_CASE("the format follows the extension", "[prompts]") {
  CHECK(PromptFileFormatFor("a/b.jsonl") == PromptFileFormat::kJsonl);
  CHECK(PromptFileFormatFor("b.json") == PromptFileFormat::kJsonl);
  CHECK(PromptFileFormatFor("b.txt") == PromptFileFormat::kText);
  CHECK(PromptFileFormatFor("jsonl") == PromptFileFormat::kText);
}

TEST_CASE("jsonl prompts with ids and overrides", "[prompts]") {
  TempFile file(".jsonl",
                "\xEF\xBB\xBF{\"prompt\": \"Once upon\", \"id\": \"a\", \"max_new_tokens\": 7,"
                " \"temperature\": 0.8, \"top_k\": 40, \"top_p\": 0.9, \"min_p\": 0.05,"
                " \"repetition_penalty\": 1.1, \"seed\": 18446744073709551615,"
                " \"stop\": [\"\\n\", \"END\"], \"ignore_eos\": true, \"logprobs\": 3}\n"
                "\n"
                "{\"prompt_ids\": [1, 2, 3], \"id\": 17, \"stop\": \"x\"}\n"
                "{\"prompt\": \"caf\\u00e9\", \"logprobs\": true}\n");
  const auto entries = ReadPromptFile(file.path());
  REQUIRE(entries.size() == 3);
  const PromptEntry& a = entries[0];
  CHECK(a.id == "a");
  CHECK(a.line == 1);
  CHECK(*a.text == "Once upon");
  const RequestOverrides& o = a.overrides;
  CHECK(*o.max_new_tokens == 7);
  CHECK(*o.temperature == 0.8);
  CHECK(*o.top_k == 40);
  CHECK(*o.top_p == 0.9);
  CHECK(*o.min_p == 0.05);
  CHECK(*o.repetition_penalty == 1.1);
  CHECK(*o.seed == 18446744073709551615ull);
  CHECK(*o.stop == std::vector<std::string>{"\n", "END"});
  CHECK(*o.ignore_eos);
  CHECK(*o.logprobs == 3);

  CHECK(entries[1].id == "17");
  CHECK(entries[1].line == 3);
  CHECK_FALSE(entries[1].text.has_value());
  CHECK(*entries[1].ids == std::vector<TokenId>{1, 2, 3});
  CHECK(*entries[1].overrides.stop == std::vector<std::string>{"x"});
  CHECK_FALSE(entries[1].overrides.temperature.has_value());

  CHECK(entries[2].id == "4");  // default id: the line number
  CHECK(*entries[2].text == "caf\xC3\xA9");
  CHECK(*entries[2].overrides.logprobs == 0);
}

TEST_CASE("overrides apply onto the CLI defaults", "[prompts]") {
  Request defaults;
  defaults.max_new_tokens = 50;
  defaults.sampling.temperature = 0.7;
  defaults.sampling.seed = 5;
  defaults.stop = {"\n\n"};
  const auto entries =
      ParsePrompts("{\"prompt_ids\": [4, 5], \"id\": \"q\", \"temperature\": 0, \"top_k\": 3}\n",
                   "p.jsonl", PromptFileFormat::kJsonl);
  REQUIRE(entries.size() == 1);
  const Request request = RequestFor(entries[0], defaults);
  CHECK(request.id == "q");
  CHECK(request.line_number == 1);
  CHECK(request.prompt_ids == std::vector<TokenId>{4, 5});
  CHECK(request.max_new_tokens == 50);
  CHECK(request.sampling.temperature == 0.0);
  CHECK(request.sampling.top_k == 3);
  CHECK(request.sampling.seed == 5);
  CHECK(request.stop == std::vector<std::string>{"\n\n"});
}

TEST_CASE("malformed jsonl lines are errors naming file and line", "[prompts]") {
  const auto jsonl = PromptFileFormat::kJsonl;
  const std::string good = "{\"prompt\": \"ok\"}\n";
  CHECK_THAT(ErrorOf(good + "{\"prompt\": \"x\",}\n", jsonl),
             Catch::StartsWith("p.jsonl:2: not valid JSON"));
  CHECK_THAT(ErrorOf(good + good + "{\"promt\": \"x\"}\n", jsonl),
             Catch::StartsWith("p.jsonl:3: unknown key \"promt\""));
  CHECK_THAT(ErrorOf("[1, 2]\n", jsonl),
             Catch::Contains("p.jsonl:1: each line must be a JSON object"));
  CHECK_THAT(ErrorOf("{\"id\": \"a\"}\n", jsonl), Catch::Contains("exactly one of"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"prompt_ids\": [1]}\n", jsonl),
             Catch::Contains("exactly one of"));
  CHECK_THAT(ErrorOf("{\"prompt\": 5}\n", jsonl), Catch::Contains("\"prompt\" must be a string"));
  CHECK_THAT(ErrorOf("{\"prompt_ids\": [1, -2]}\n", jsonl), Catch::Contains("prompt_ids"));
  CHECK_THAT(ErrorOf("{\"prompt_ids\": []}\n", jsonl), Catch::Contains("prompt_ids"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"id\": 1.5}\n", jsonl), Catch::Contains("\"id\""));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"top_k\": \"3\"}\n", jsonl),
             Catch::Contains("\"top_k\" must be an integer"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"top_p\": 0}\n", jsonl), Catch::Contains("top_p"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"temperature\": -1}\n", jsonl),
             Catch::Contains("p.jsonl:1: temperature"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"seed\": -1}\n", jsonl), Catch::Contains("\"seed\""));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"stop\": [\"\"]}\n", jsonl), Catch::Contains("stop"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"max_new_tokens\": -1}\n", jsonl),
             Catch::Contains("max_new_tokens"));
  // The engine's ranges and words (engine/request_limits.h), as the flags get them.
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"max_new_tokens\": 0}\n", jsonl),
             Catch::Contains("p.jsonl:1: max_new_tokens must be an integer >= 1"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"top_p\": 2}\n", jsonl),
             Catch::Contains("p.jsonl:1: top_p must be in (0, 1] (1 means off), got 2"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"logprobs\": -1}\n", jsonl),
             Catch::Contains("p.jsonl:1: logprobs must be an integer >= 0"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"top_k\": 1.5}\n", jsonl),
             Catch::Contains("\"top_k\" must be an integer, got 1.5"));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\", \"ignore_eos\": 1}\n", jsonl),
             Catch::Contains("ignore_eos"));
  // Duplicate ids, including an explicit id that equals another line's default.
  CHECK_THAT(
      ErrorOf("{\"prompt\": \"a\", \"id\": \"x\"}\n{\"prompt\": \"b\", \"id\": \"x\"}\n", jsonl),
      Catch::StartsWith("p.jsonl:2: duplicate id \"x\""));
  CHECK_THAT(ErrorOf("{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"id\": 1}\n", jsonl),
             Catch::StartsWith("p.jsonl:2: duplicate id \"1\""));
  CHECK(ErrorOf(good + "   \n" + good, jsonl) == "no error");
}

TEST_CASE("ids remember whether they were JSON numbers", "[prompts]") {
  const auto entries = ParsePrompts(
      "{\"prompt\": \"a\", \"id\": 7}\n{\"prompt\": \"b\", \"id\": \"8\"}\n{\"prompt\": \"c\"}\n",
      "p.jsonl", PromptFileFormat::kJsonl);
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].id == "7");
  CHECK(entries[0].id_is_number);
  CHECK(entries[1].id == "8");
  CHECK_FALSE(entries[1].id_is_number);
  CHECK(entries[2].id == "3");  // the line number, a number
  CHECK(entries[2].id_is_number);
  const Request request = RequestFor(entries[0], Request{});
  CHECK(request.id_is_number);
  const auto text = ParsePrompts("one\ntwo\n", "p.txt", PromptFileFormat::kText);
  REQUIRE(text.size() == 2);
  CHECK(text[1].id == "2");
  CHECK(text[1].id_is_number);
}

TEST_CASE("skip_bad_lines drops bad lines and keeps the rest", "[prompts]") {
  const std::string content = "{\"prompt\": \"one\"}\n"
                              "not json\n"
                              "{\"prompt\": \"three\", \"bogus\": 1}\n"
                              "{\"prompt\": \"four\", \"id\": \"1\"}\n"
                              "{\"prompt\": \"five\"}\n";
  CHECK_THROWS_AS(ParsePrompts(content, "p.jsonl", PromptFileFormat::kJsonl), Error);
  const auto entries =
      ParsePrompts(content, "p.jsonl", PromptFileFormat::kJsonl, {.skip_bad_lines = true});
  REQUIRE(entries.size() == 2);
  CHECK(*entries[0].text == "one");
  CHECK(*entries[1].text == "five");
  CHECK(entries[1].line == 5);
}

TEST_CASE("invalid UTF-8 flags the entry, not the file", "[prompts]") {
  SECTION("text") {
    const auto entries = ParsePrompts("fine\nab\xC3(\nbad \xED\xA0\x80 surrogate\nlast\n", "p.txt",
                                      PromptFileFormat::kText);
    REQUIRE(entries.size() == 4);
    CHECK(entries[0].error.empty());
    CHECK(entries[1].error == "line 2: prompt is not valid UTF-8 at byte 2");
    CHECK(entries[2].error == "line 3: prompt is not valid UTF-8 at byte 4");
    CHECK(entries[3].error.empty());
  }
  SECTION("jsonl") {
    const auto entries =
        ParsePrompts("{\"prompt\": \"ok\"}\n{\"id\": \"b\", \"prompt\": \"x\xFFy\"}\n{\"prompt\": "
                     "\"\xF0\x9F\x98\x80\"}\n",
                     "p.jsonl", PromptFileFormat::kJsonl);
    REQUIRE(entries.size() == 3);
    CHECK(entries[0].error.empty());
    CHECK(entries[1].id == "b");
    CHECK_THAT(entries[1].error, Catch::StartsWith("line 2: prompt is not valid UTF-8 at byte 24"));
    CHECK(entries[2].error.empty());
    CHECK(*entries[2].text == "\xF0\x9F\x98\x80");
  }
}

TEST_CASE("the UTF-8 validator is strict", "[prompts]") {
  CHECK(FirstInvalidUtf8("plain ascii") == -1);
  CHECK(FirstInvalidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == -1);  // é € 😀
  CHECK(FirstInvalidUtf8("\xC0\xAF") == 0);                               // overlong '/'
  CHECK(FirstInvalidUtf8("a\xE0\x80\xAF") == 1);                          // overlong 3-byte
  CHECK(FirstInvalidUtf8("ab\xED\xA0\x80") == 2);                         // surrogate
  CHECK(FirstInvalidUtf8("\xF4\x90\x80\x80") == 0);                       // above U+10FFFF
  CHECK(FirstInvalidUtf8("ok\xE2\x82") == 2);                             // truncated
  CHECK(FirstInvalidUtf8("\x80") == 0);                                   // lone continuation
  CHECK(ReplaceInvalidUtf8("a\xFF"
                           "b") == "a\xEF\xBF\xBD"
                                   "b");
}

TEST_CASE("a missing prompt file names the path and the reason", "[prompts]") {
  try {
    ReadPromptFile("/nonexistent/zinf/prompts.txt");
    FAIL("no error");
  } catch (const Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("/nonexistent/zinf/prompts.txt") &&
                                 Catch::Contains("No such file or directory"));
  }
}

TEST_CASE("PromptFileReader streams: memory stays flat however long the file", "[prompts]") {
  // 200,000 text lines (~5 MiB): reading them all at once would hold megabytes; the reader holds
  // one line. mallinfo2 counts the bytes malloc has handed out and not had back.
  std::string content;
  for (int i = 0; i < 200000; ++i) content += fmt::format("prompt number {} of many\n", i);
  TempFile file(".txt", content);
  content.clear();
  content.shrink_to_fit();
  PromptFileReader reader(file.path());
  const size_t baseline = mallinfo2().uordblks;
  size_t most_extra = 0;
  int64_t count = 0;
  while (std::optional<PromptEntry> entry = reader.Next()) {
    ++count;
    if (count % 1000 != 0) continue;
    const size_t now = mallinfo2().uordblks;
    if (now > baseline) most_extra = std::max(most_extra, now - baseline);
  }
  CHECK(count == 200000);
  CHECK(reader.line() == 200000);
  CHECK(most_extra < (64u << 10));  // 64 KiB: one line and one entry, not the file
}

TEST_CASE("PromptFileReader: same entries as ParsePrompts, errors name the line", "[prompts]") {
  const std::string content =
      "\xEF\xBB\xBF{\"id\": \"a\", \"prompt\": \"one\"}\r\n\n{\"prompt_ids\": [1, 2]}\n"
      "{\"id\": \"a\", \"prompt\": \"dup\"}\n{\"prompt\": \"last\"}";
  TempFile file(".jsonl", content);
  SECTION("without skip_bad_lines the duplicate fails at its line, after the good ones") {
    PromptFileReader reader(file.path());
    CHECK(reader.Next()->id == "a");
    CHECK(reader.Next()->id == "3");
    CHECK_THROWS_WITH(reader.Next(), Catch::Contains(file.path() + ":4: duplicate id \"a\""));
  }
  SECTION("with skip_bad_lines it matches ParsePrompts") {
    const PromptFileOptions skip{.skip_bad_lines = true};
    const auto streamed = ReadPromptFile(file.path(), skip);
    const auto parsed = ParsePrompts(content, file.path(), PromptFileFormat::kJsonl, skip);
    REQUIRE(streamed.size() == 3);
    REQUIRE(parsed.size() == 3);
    for (size_t i = 0; i < streamed.size(); ++i) {
      CHECK(streamed[i].id == parsed[i].id);
      CHECK(streamed[i].line == parsed[i].line);
      CHECK(streamed[i].text == parsed[i].text);
      CHECK(streamed[i].ids == parsed[i].ids);
    }
    CHECK(streamed[2].line == 5);
    CHECK(*streamed[2].text == "last");
  }
}

TEST_CASE("IdSet finds every id once, through growth", "[prompts]") {
  IdSet ids;
  for (int i = 0; i < 100000; ++i) CHECK(ids.Insert("id-" + std::to_string(i)));
  CHECK(ids.size() == 100000);
  CHECK_FALSE(ids.Insert("id-0"));
  CHECK_FALSE(ids.Insert("id-99999"));
  CHECK(ids.Insert(""));
  CHECK(ids.Contains(""));
  CHECK(ids.Contains("id-4242"));
  CHECK_FALSE(ids.Contains("id-100000"));
  CHECK(ids.memory_bytes() < 100001 * 48);  // 20-40 bytes an id: either array may just have doubled
}

}  // namespace
}  // namespace zinf::cli

// Found by fuzzing: a number beyond a double and deeply nested JSON are ordinary bad lines.
TEST_CASE("out-of-range numbers and deep nesting are bad lines, named and skippable") {
  const std::string deep = "{\"id\": \"d\", \"prompt\": " + std::string(300000, '[') + "}";
  const std::string content = "{\"id\": \"a\", \"prompt\": \"hi\", \"temperature\": 1e400}\n" +
                              deep + "\n{\"id\": \"b\", \"prompt\": \"ok\"}\n";
  CHECK_THROWS_WITH(
      zinf::cli::ParsePrompts(content, "p.jsonl", zinf::cli::PromptFileFormat::kJsonl),
      Catch::Contains("p.jsonl:1") && Catch::Contains("not valid JSON"));
  const auto entries = zinf::cli::ParsePrompts(
      content, "p.jsonl", zinf::cli::PromptFileFormat::kJsonl, zinf::cli::PromptFileOptions{true});
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].id == "b");
}
