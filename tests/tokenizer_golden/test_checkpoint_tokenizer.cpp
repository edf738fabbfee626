// A checkpoint whose tokenizer is a tokenizer.json: convert picks it, generate and tokenize use it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

TEST_CASE("convert and generate with a tokenizer.json checkpoint", "[hf_tokenizer][cli]") {
  namespace fs = std::filesystem;
  const std::string shared = std::string(ZINF_SOURCE_DIR) + "/../shared/tokenizers/mistral-7b-v0.1";
  const std::string dir = MakeTempDir("hf-json-checkpoint");
  RandomModelSpec spec = LlamaWithBiasSpec();
  spec.vocab_size = 32000;  // Mistral's vocabulary
  spec.with_tokenizer = false;
  WriteRandomHfCheckpoint(dir + "/hf", spec);
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "tokenizer.model"}) {
    fs::copy_file(shared + "/" + file, dir + "/hf/" + file);
  }
  const CliResult convert = RunZinf({"convert", dir + "/hf", dir + "/zinf"});
  INFO(convert.err);
  REQUIRE(convert.exit_code == 0);
  // Both files are present; tokenizer.json is the reference Hugging Face loads, so it wins.
  const nlohmann::json manifest = nlohmann::json::parse(ReadFile(dir + "/zinf/manifest.json"));
  CHECK(manifest["tokenizer"]["kind"] == "hf-json");

  const CliResult tokens =
      RunZinf({"tokenize", "--model", dir + "/zinf"}, "{\"text\": \" Hello\"}\n");
  REQUIRE(tokens.exit_code == 0);
  CHECK(nlohmann::json::parse(Lines(tokens.out)[0])["ids"] == nlohmann::json({1, 22557}));

  WriteFile(dir + "/p.txt", "Hello world\nThe quick brown fox\n");
  const CliResult generate =
      RunZinf({"generate", "--model", dir + "/zinf", "--prompts", dir + "/p.txt", "--out",
               dir + "/o.jsonl", "--max-new-tokens", "5", "--ignore-eos"});
  INFO(generate.err);
  REQUIRE(generate.exit_code == 0);
  const std::vector<std::string> lines = Lines(ReadFile(dir + "/o.jsonl"));
  REQUIRE(lines.size() == 2);
  const nlohmann::json first = nlohmann::json::parse(lines[0]);
  CHECK(first["prompt_tokens"] == 3);  // <s> ▁Hello ▁world
  CHECK(first["token_ids"].size() == 5);
}

}  // namespace zinf::testing
