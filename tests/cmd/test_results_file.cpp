// Tests for cmd/results_file: line format, no silent overwrite, resume after a torn write.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cmd/results_file.h"
#include "engine/error.h"

namespace zinf::cli {
namespace {

// A path under the system temp folder (not created), removed when the test ends.
class TempPath {
 public:
  TempPath() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("zinf_test_out_{}_{}.jsonl", ::getpid(), counter++);
    std::filesystem::remove(path_);
  }
  ~TempPath() { std::filesystem::remove(path_); }
  std::string str() const { return path_.string(); }
  void Write(std::string_view content) const { std::ofstream(path_, std::ios::binary) << content; }
  std::string Read() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }
  std::vector<nlohmann::json> Lines() const {
    std::vector<nlohmann::json> lines;
    std::istringstream in(Read());
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  }

 private:
  std::filesystem::path path_;
};

Completion MakeCompletion(std::string id, std::string text) {
  Completion completion;
  completion.id = std::move(id);
  completion.text = std::move(text);
  completion.token_ids = {5, 6, 2};
  completion.finish_reason = FinishReason::kEos;
  completion.prompt_tokens = 4;
  return completion;
}

std::string ErrorOpening(const std::string& path, bool resume) {
  try {
    ResultsFile file(path, resume);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST_CASE("each completion and error is one JSON line", "[output]") {
  TempPath path;
  {
    ResultsFile out(path.str(), /*resume=*/false);
    CHECK(out.done_ids().empty());
    Completion completion = MakeCompletion("7", "Once upon a time");
    completion.logprobs.push_back({{5, -0.25f}, {{5, -0.25f}, {9, -1.5f}}});
    completion.logprobs.push_back({{6, -0.5f}, {}});
    completion.logprobs.push_back({{2, -0.125f}, {}});
    out.Append(completion, {.line = 3});
    out.Append(MakeCompletion("b", "plain"));
    out.AppendError("12", 12, "prompt is not valid UTF-8 at byte 3");
  }
  const std::string content = path.Read();
  CHECK(content.back() == '\n');
  CHECK(content.rfind("{\"id\":\"7\",\"text\":", 0) == 0);  // id first, a string as given
  const auto lines = path.Lines();
  REQUIRE(lines.size() == 3);
  const auto& first = lines[0];
  CHECK(first["id"] == "7");
  CHECK(first["text"] == "Once upon a time");
  CHECK(first["token_ids"] == nlohmann::json({5, 6, 2}));
  CHECK(first["finish_reason"] == "eos");
  CHECK(first["prompt_tokens"] == 4);
  CHECK(first["completion_tokens"] == 3);
  CHECK(first["line"] == 3);
  REQUIRE(first["logprobs"].size() == 3);
  CHECK(first["logprobs"][0]["id"] == 5);
  CHECK(first["logprobs"][0]["logprob"] == -0.25);
  CHECK(first["logprobs"][0]["top"][1]["id"] == 9);
  CHECK(first["logprobs"][0]["top"][1]["logprob"] == -1.5);
  CHECK(first["logprobs"][1]["top"].empty());
  CHECK_FALSE(first["logprobs"][0].contains("token"));  // no tokenizer, no token text
  CHECK_FALSE(lines[1].contains("logprobs"));
  CHECK_FALSE(lines[1].contains("line"));
  CHECK(lines[2]["id"] == "12");
  CHECK(lines[2]["line"] == 12);
  CHECK(lines[2]["finish_reason"] == "error");
  CHECK(lines[2]["error"] == "prompt is not valid UTF-8 at byte 3");
}

TEST_CASE("numeric ids are written as numbers; logprobs carry token text", "[output]") {
  TempPath path;
  {
    ResultsFile out(path.str(), /*resume=*/false);
    Completion completion = MakeCompletion("7", "Once");
    completion.id_is_number = true;
    // Built field by field: GCC 12 at -O2 warns (-Wmaybe-uninitialized) on the nested braced
    // temporaries of std::optional members.
    StepLogprobs step;
    step.chosen.id = 5;
    step.chosen.logprob = -0.25f;
    step.chosen.token = " Once";
    step.top.resize(2);
    step.top[0] = step.chosen;
    step.top[1].id = 9;
    step.top[1].logprob = -1.5f;
    step.top[1].token = "\xE2\x82";
    completion.logprobs.push_back(std::move(step));
    out.Append(completion);
    out.Append(MakeCompletion("8", "as a string"));
    out.AppendError({"18446744073709551615", true}, 3, "too long");
    out.AppendError({"-4", true}, 4, "too long");
  }
  const std::string content = path.Read();
  CHECK(content.rfind("{\"id\":7,\"text\":", 0) == 0);
  CHECK_THAT(content, Catch::Contains("{\"id\":5,\"token\":\" Once\",\"logprob\":-0.25,\"top\":"));
  CHECK_THAT(content, Catch::Contains("{\"id\":9,\"token\":\"\xEF\xBF\xBD\",\"logprob\""));
  const auto lines = path.Lines();
  REQUIRE(lines.size() == 4);
  CHECK(lines[0]["id"] == 7);
  CHECK(lines[1]["id"] == "8");
  CHECK(lines[2]["id"] == 18446744073709551615ull);
  CHECK(lines[3]["id"] == -4);
}

TEST_CASE("invalid UTF-8 in text is written as U+FFFD", "[output]") {
  TempPath path;
  {
    ResultsFile out(path.str(), false);
    out.Append(MakeCompletion("x", "ab\xE2\x82"));  // a 3-byte character cut after two bytes
    out.Append(MakeCompletion("y", "\xFF ok \xC3\xA9"));
  }
  const auto lines = path.Lines();
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0]["text"].get<std::string>(), Catch::StartsWith("ab\xEF\xBF\xBD"));
  CHECK(lines[1]["text"] == "\xEF\xBF\xBD ok \xC3\xA9");
}

TEST_CASE("an existing non-empty file is never overwritten without --resume", "[output]") {
  TempPath path;
  path.Write("{\"id\":\"1\",\"text\":\"done\"}\n");
  const std::string message = ErrorOpening(path.str(), false);
  CHECK_THAT(message, Catch::Contains(path.str()) && Catch::Contains("--resume"));
  CHECK(path.Read() == "{\"id\":\"1\",\"text\":\"done\"}\n");
  // An empty file holds no work, so it is fine to use.
  path.Write("");
  CHECK(ErrorOpening(path.str(), false) == "no error");
}

TEST_CASE("resume drops a torn final line and reports done ids", "[output]") {
  TempPath path;
  path.Write("{\"id\":\"a\",\"text\":\"x\",\"finish_reason\":\"length\"}\n"
             "{\"id\":\"3\",\"error\":\"too long\",\"finish_reason\":\"error\"}\n"
             "{\"id\":\"c\",\"text\":\"hal");
  {
    ResultsFile out(path.str(), /*resume=*/true);
    CHECK(out.done_ids() == std::unordered_set<std::string>{"a", "3"});
    CHECK(path.Read() == "{\"id\":\"a\",\"text\":\"x\",\"finish_reason\":\"length\"}\n"
                         "{\"id\":\"3\",\"error\":\"too long\",\"finish_reason\":\"error\"}\n");
    out.Append(MakeCompletion("c", "half and the rest"));
  }
  const auto lines = path.Lines();
  REQUIRE(lines.size() == 3);
  CHECK(lines[2]["id"] == "c");
  CHECK(lines[2]["text"] == "half and the rest");
  // Resuming again sees all three.
  ResultsFile again(path.str(), true);
  CHECK(again.done_ids().size() == 3);
}

TEST_CASE("resume edge cases", "[output]") {
  TempPath path;
  SECTION("a missing file starts empty") {
    ResultsFile out(path.str(), true);
    CHECK(out.done_ids().empty());
  }
  SECTION("a single torn line leaves an empty file") {
    path.Write("{\"id\":\"a\",\"te");
    ResultsFile out(path.str(), true);
    CHECK(out.done_ids().empty());
    CHECK(path.Read().empty());
  }
  SECTION("a damaged line in the middle is an error naming it") {
    path.Write("{\"id\":\"a\"}\n{\"id\":\"b\",\"te\n{\"id\":\"c\"}\n");
    const std::string message = ErrorOpening(path.str(), true);
    CHECK_THAT(message, Catch::StartsWith(path.str() + ":2: not valid JSON"));
    CHECK(path.Read() == "{\"id\":\"a\"}\n{\"id\":\"b\",\"te\n{\"id\":\"c\"}\n");  // untouched
  }
  SECTION("a line without a string or integer id is not a zinf result") {
    path.Write("{\"id\":\"a\"}\n{\"id\":4.5}\n");
    CHECK_THAT(ErrorOpening(path.str(), true), Catch::StartsWith(path.str() + ":2: not a zinf"));
    path.Write("{\"id\":\"a\"}\n{\"text\":\"x\"}\n");
    CHECK_THAT(ErrorOpening(path.str(), true), Catch::StartsWith(path.str() + ":2: not a zinf"));
  }
  SECTION("integer ids are done ids too, by their digits: 4 is \"4\"") {
    path.Write("{\"id\":\"a\"}\n{\"id\":4}\n{\"id\":-5}\n");
    ResultsFile out(path.str(), true);
    CHECK(out.done_ids() == std::unordered_set<std::string>{"a", "4", "-5"});
  }
  SECTION("stdout cannot be resumed") {
    CHECK_THAT(ErrorOpening("-", true), Catch::Contains("--resume"));
  }
}

TEST_CASE("an unwritable path names the path and the reason", "[output]") {
  const std::string message = ErrorOpening("/nonexistent/zinf/out.jsonl", false);
  CHECK_THAT(message, Catch::Contains("/nonexistent/zinf/out.jsonl") &&
                          Catch::Contains("No such file or directory"));
}

TEST_CASE("a full disk is an error naming the file and the reason", "[output]") {
  if (!std::filesystem::exists("/dev/full")) return;  // the CLI tests cover EFBIG on a real file
  ResultsFile output("/dev/full", false);
  CHECK_THROWS_WITH(output.Append(MakeCompletion("1", "text")),
                    Catch::Contains("cannot write to output file /dev/full") &&
                        Catch::Contains(std::strerror(ENOSPC)));
}

}  // namespace
}  // namespace zinf::cli
