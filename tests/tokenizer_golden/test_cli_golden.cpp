// Every golden line of every shared tokenizer through `zinf tokenize --tokenizer FILE` and
// `zinf detokenize`, as a user would run them.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "tests/cmd/cli_harness.h"

namespace zinf::testing {

namespace {

void CheckThroughCli(const std::string& name) {
  const std::string dir = std::string(ZINF_SOURCE_DIR) + "/../shared/tokenizers/" + name;
  const std::string tokenizer = dir + "/tokenizer.json";
  std::ifstream golden_file(dir + "/golden.jsonl");
  REQUIRE(golden_file.good());
  std::vector<nlohmann::json> golden;
  std::string texts, id_lists;
  for (std::string line; std::getline(golden_file, line);) {
    if (line.empty()) continue;
    golden.push_back(nlohmann::json::parse(line));
    texts += nlohmann::json{{"text", golden.back()["text"]}}.dump() + "\n";
    id_lists += nlohmann::json{{"ids", golden.back()["ids"]}}.dump() + "\n";
  }
  const CliResult with_special = RunZinf({"tokenize", "--tokenizer", tokenizer}, texts);
  const CliResult plain = RunZinf({"tokenize", "--tokenizer", tokenizer, "--no-special"}, texts);
  const CliResult decoded = RunZinf({"detokenize", "--tokenizer", tokenizer}, id_lists);
  INFO(name << ": " << with_special.err << plain.err << decoded.err);
  REQUIRE(with_special.exit_code == 0);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(decoded.exit_code == 0);
  const std::vector<std::string> special_lines = Lines(with_special.out);
  const std::vector<std::string> plain_lines = Lines(plain.out);
  const std::vector<std::string> decoded_lines = Lines(decoded.out);
  REQUIRE(special_lines.size() == golden.size());
  REQUIRE(plain_lines.size() == golden.size());
  REQUIRE(decoded_lines.size() == golden.size());
  int mismatches = 0;
  for (size_t i = 0; i < golden.size(); ++i) {
    INFO(name << " case " << golden[i]["case"]);
    const bool same =
        nlohmann::json::parse(special_lines[i])["ids"] == golden[i]["ids_with_special"] &&
        nlohmann::json::parse(plain_lines[i])["ids"] == golden[i]["ids"] &&
        nlohmann::json::parse(decoded_lines[i])["text"] == golden[i]["decoded"];
    CHECK(same);
    mismatches += same ? 0 : 1;
  }
  INFO(name << ": " << mismatches << " of " << golden.size() << " lines differ");
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("zinf tokenize/detokenize reproduce every golden line", "[hf_tokenizer][cli]") {
  for (const char* name :
       {"gpt2", "opt-125m", "mistral-7b-v0.1", "phi-3-mini", "llama-3-8b-instruct", "qwen3"}) {
    CheckThroughCli(name);
  }
}

}  // namespace zinf::testing
