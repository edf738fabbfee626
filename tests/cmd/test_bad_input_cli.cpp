// Bad input through the binary: a clear message naming the file and the place, a non-zero exit,
// and no lost work.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace fs = std::filesystem;

namespace {

std::string CopyOfStories260K(const std::string& name) {
  const std::string dir = MakeTempDir(name);
  fs::copy(std::string(ZINF_SOURCE_DIR) + "/models/stories260K", dir,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return dir;
}

CliResult Generate(const std::string& model, const std::string& prompts, const std::string& out,
                   std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      "generate", "--model", model, "--prompts", prompts, "--out", out, "--max-new-tokens", "8"};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunZinf(args);
}

}  // namespace

TEST_CASE("missing files are named") {
  const std::string dir = MakeTempDir("bad-missing");
  CliResult result = RunZinf({"convert", dir + "/nope", dir + "/out"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find(dir + "/nope") != std::string::npos);

  result = Generate(dir + "/no-model", dir + "/p.txt", dir + "/o.jsonl");
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("no-model") != std::string::npos);

  result = Generate(ConvertedStories260KDir(), dir + "/no-prompts.txt", dir + "/o.jsonl");
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("no-prompts.txt") != std::string::npos);
}

TEST_CASE("a truncated safetensors file is refused by convert, naming it") {
  const std::string dir = CopyOfStories260K("bad-truncated");
  fs::resize_file(dir + "/model.safetensors", 500000);
  const CliResult result = RunZinf({"convert", dir, dir + "/out"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("model.safetensors") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out/manifest.json"));
}

TEST_CASE("an unsupported architecture is refused with the supported list") {
  const std::string dir = CopyOfStories260K("bad-arch");
  std::string config = ReadFile(dir + "/config.json");
  config.replace(config.find("\"llama\""), 7, "\"gpt2\"");
  WriteFile(dir + "/config.json", config);
  const CliResult result = RunZinf({"convert", dir, dir + "/out"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("gpt2") != std::string::npos);
  CHECK(result.err.find("config.json") != std::string::npos);
}

TEST_CASE("an unsupported tensor dtype is refused, naming the tensor") {
  const std::string dir = MakeTempDir("bad-dtype");
  RandomModelSpec spec = LlamaWithBiasSpec();
  WriteRandomHfCheckpoint(dir + "/hf", spec);
  // Rewrite one tensor's dtype in the header to I32 (same element size as F32).
  std::string bytes = ReadFile(dir + "/hf/model.safetensors");
  const size_t name = bytes.find("\"model.norm.weight\"");
  REQUIRE(name != std::string::npos);
  const size_t dtype = bytes.find("\"F32\"", name);
  bytes.replace(dtype, 5, "\"I32\"");
  WriteFile(dir + "/hf/model.safetensors", bytes);
  const CliResult result = RunZinf({"convert", dir + "/hf", dir + "/out"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("model.norm.weight") != std::string::npos);
  CHECK(result.err.find("I32") != std::string::npos);
}

TEST_CASE("a pickle checkpoint is refused with advice to use safetensors") {
  const std::string dir = MakeTempDir("bad-pickle");
  fs::copy_file(std::string(ZINF_SOURCE_DIR) + "/models/stories260K/config.json",
                dir + "/config.json");
  WriteFile(dir + "/pytorch_model.bin", "not really a pickle");
  const CliResult result = RunZinf({"convert", dir, dir + "/out"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("safetensors") != std::string::npos);
}

TEST_CASE("a corrupted layer extent is reported with its layer, in both weight modes") {
  const std::string dir = MakeTempDir("bad-checksum");
  fs::copy(ConvertedStories260KDir(), dir + "/model", fs::copy_options::recursive);
  const nlohmann::json manifest = nlohmann::json::parse(ReadFile(dir + "/model/manifest.json"));
  uint64_t layer2_offset = 0;
  for (const auto& extent : manifest["extents"]) {
    if (extent["name"] == "layer.2") layer2_offset = extent["offset"];
  }
  REQUIRE(layer2_offset > 0);
  {
    std::fstream weights(dir + "/model/weights.bin",
                         std::ios::in | std::ios::out | std::ios::binary);
    weights.seekp(static_cast<std::streamoff>(layer2_offset + 100));
    weights.put('\x5a');
  }
  WriteFile(dir + "/p.txt", "Once upon a time\n");
  for (const char* mode : {"resident", "stream"}) {
    INFO(mode);
    const CliResult result = Generate(dir + "/model", dir + "/p.txt", dir + "/o-" + mode + ".jsonl",
                                      {"--weights", mode});
    CHECK(result.exit_code != 0);
    CHECK(result.err.find("checksum") != std::string::npos);
    CHECK(result.err.find("layer.2") != std::string::npos);
  }
}

TEST_CASE("a malformed JSONL line is named; --skip-bad-lines runs the others") {
  const std::string dir = MakeTempDir("bad-jsonl");
  WriteFile(dir + "/p.jsonl", "{\"id\": \"a\", \"prompt\": \"Once upon a time\"}\n"
                              "{\"id\": \"b\", \"prompt\": \"The sun\"\n"
                              "{\"id\": \"c\", \"prompt\": \"Tom was sad.\"}\n");
  CliResult result = Generate(ConvertedStories260KDir(), dir + "/p.jsonl", dir + "/o.jsonl");
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("p.jsonl:2") != std::string::npos);
  CHECK(Lines(ReadFile(dir + "/o.jsonl")).empty());

  result = Generate(ConvertedStories260KDir(), dir + "/p.jsonl", dir + "/o2.jsonl",
                    {"--skip-bad-lines"});
  INFO(result.err);
  CHECK(result.exit_code == 0);
  CHECK(result.err.find("p.jsonl:2") != std::string::npos);
  CHECK(Lines(ReadFile(dir + "/o2.jsonl")).size() == 2);
}

TEST_CASE("invalid UTF-8 and over-long prompts fail alone; the other requests run") {
  const std::string dir = MakeTempDir("bad-requests");
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "the cat sat on the mat. ";
  WriteFile(dir + "/p.txt",
            "Once upon a time\ncaf\xc3\x28 bad bytes\n" + long_prompt + "\nThe sun\n");
  const CliResult result = Generate(ConvertedStories260KDir(), dir + "/p.txt", dir + "/o.jsonl");
  INFO(result.err);
  CHECK(result.exit_code == 3);  // finished, with some requests failed (cmd/exit_codes.h)
  std::map<std::string, nlohmann::json> by_id;
  for (const std::string& line : Lines(ReadFile(dir + "/o.jsonl"))) {
    const nlohmann::json object = nlohmann::json::parse(line);
    by_id[IdKey(object["id"])] = object;
  }
  REQUIRE(by_id.size() == 4);
  CHECK(by_id["1"]["finish_reason"] == "length");
  CHECK(by_id["2"]["finish_reason"] == "error");
  CHECK(by_id["2"]["error"].get<std::string>().find("UTF-8") != std::string::npos);
  CHECK(by_id["3"]["finish_reason"] == "error");
  CHECK(by_id["3"]["error"].get<std::string>().find("context") != std::string::npos);
  CHECK(by_id["4"]["finish_reason"] == "length");
}

TEST_CASE("an existing output is never overwritten without --resume") {
  const std::string dir = MakeTempDir("bad-existing");
  WriteFile(dir + "/p.txt", "Once upon a time\n");
  WriteFile(dir + "/o.jsonl", "{\"id\": \"1\", \"text\": \"finished work\"}\n");
  const CliResult result = Generate(ConvertedStories260KDir(), dir + "/p.txt", dir + "/o.jsonl");
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("--resume") != std::string::npos);
  CHECK(ReadFile(dir + "/o.jsonl") == "{\"id\": \"1\", \"text\": \"finished work\"}\n");
}

}  // namespace zinf::testing
