// Every line of the shared chat goldens through `zinf chat-template --tokenizer-config FILE`, in
// one process per model: the command line renders byte for byte what transformers renders.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cmd/cli_harness.h"

namespace zinf::testing {

TEST_CASE("zinf chat-template renders every shared chat golden line exactly", "[chat]") {
  for (const char* name : {"llama-3-8b-instruct", "phi-3-mini", "qwen3"}) {
    const std::string dir = std::string(ZINF_SOURCE_DIR) + "/../shared/tokenizers/" + name;
    // Ordered: templates print tools with tojson in the order given.
    std::vector<nlohmann::ordered_json> cases;
    std::string input;
    for (const std::string& line : Lines(ReadFile(dir + "/chat_golden.jsonl"))) {
      const nlohmann::ordered_json golden = nlohmann::ordered_json::parse(line);
      // None of these templates reads the date, so strftime_now's real clock cannot matter.
      nlohmann::ordered_json request = {{"messages", golden["messages"]},
                                        {"add_generation_prompt", golden["add_generation_prompt"]}};
      if (golden.contains("tools")) request["tools"] = golden["tools"];
      if (golden.contains("kwargs")) request["chat_template_kwargs"] = golden["kwargs"];
      input += request.dump() + "\n";
      cases.push_back(golden);
    }
    REQUIRE(cases.size() >= 14);
    const CliResult result =
        RunZinf({"chat-template", "--tokenizer-config", dir + "/tokenizer_config.json"}, input);
    INFO(name << ": " << result.err);
    const std::vector<std::string> lines = Lines(result.out);
    REQUIRE(lines.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      INFO(name << " case " << cases[i]["case"]);
      const nlohmann::json got = nlohmann::json::parse(lines[i]);
      if (cases[i].contains("expected")) {
        CHECK(got.value("text", "<error: " + got.value("error", "") + ">") ==
              cases[i]["expected"].get<std::string>());
      } else {
        CHECK(got.contains("error"));
      }
    }
  }
}

}  // namespace zinf::testing
