// zinf convert / generate / tokenize / detokenize end to end, through the binary.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <csignal>
#include <filesystem>
#include <map>
#include <string>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

std::map<std::string, nlohmann::json> ById(const std::string& jsonl) {
  std::map<std::string, nlohmann::json> by_id;
  for (const std::string& line : Lines(jsonl)) {
    const nlohmann::json object = nlohmann::json::parse(line);
    REQUIRE(by_id.count(IdKey(object["id"])) == 0);  // each request exactly once
    by_id[IdKey(object["id"])] = object;
  }
  return by_id;
}

std::string MixedPromptFile(const std::string& dir) {
  const std::string path = dir + "/prompts.txt";
  WriteFile(path,
            "Once upon a time\n"
            "Lily and Ben went to the park. They saw a big dog and a small cat.\n"
            "The sun\n"
            "One day, a clever fox found a shiny key under the old oak tree. He picked it up.\n"
            "Tom was sad.\n");
  return path;
}

}  // namespace

TEST_CASE("generate writes one JSONL object per request with the documented fields") {
  const std::string dir = MakeTempDir("cli-generate");
  const std::string out = dir + "/out.jsonl";
  const CliResult result = RunZinf({"generate", "--model", ConvertedStories260KDir(), "--prompts",
                                    MixedPromptFile(dir), "--out", out, "--max-new-tokens", "20",
                                    "--logprobs", "2", "--metrics-json", dir + "/metrics.json"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto by_id = ById(ReadFile(out));
  REQUIRE(by_id.size() == 5);
  const nlohmann::json& first = by_id.at("1");
  CHECK(first["text"].get<std::string>().rfind(", there was a little girl named Lily", 0) == 0);
  CHECK(first["finish_reason"] == "length");
  CHECK(first["prompt_tokens"] == 5);
  CHECK(first["token_ids"].size() == 20);
  REQUIRE(first["logprobs"].size() == 20);
  CHECK(first["logprobs"][0]["top"].size() == 2);
  CHECK(first["logprobs"][0]["logprob"].get<double>() <= 0.0);
  CHECK(result.err.find("tok/s") != std::string::npos);  // the summary
  const nlohmann::json metrics = nlohmann::json::parse(ReadFile(dir + "/metrics.json"));
  CHECK(metrics["tokens"]["generated"] == 100);
  CHECK(metrics["tiers"]["dram"]["resident_bytes"].get<uint64_t>() > 0);  // the model fits
  CHECK(metrics["tiers"]["nvme"]["streamed_bytes"] == 0);
  CHECK(metrics["bound"]["predicted_decode_tokens_per_s"].get<double>() > 0);
}

TEST_CASE("outputs are identical across --weights, --prefetch-depth and --batch-size") {
  const std::string dir = MakeTempDir("cli-parity");
  const std::string prompts = MixedPromptFile(dir);
  auto run = [&](std::vector<std::string> extra, const std::string& name) {
    std::vector<std::string> args = {
        "generate", "--model",        ConvertedStories260KDir(), "--prompts", prompts,
        "--out",    dir + "/" + name, "--max-new-tokens",        "24"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult result = RunZinf(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    auto by_id = ById(ReadFile(dir + "/" + name));
    for (auto& [id, object] : by_id) object.erase("line");
    return by_id;
  };
  const auto expected = run({"--weights", "resident", "--batch-size", "1"}, "a.jsonl");
  CHECK(run({"--weights", "stream", "--prefetch-depth", "0", "--batch-size", "3"}, "b.jsonl") ==
        expected);
  CHECK(run({"--weights", "stream", "--prefetch-depth", "2", "--batch-size", "8"}, "c.jsonl") ==
        expected);
  // The planner's mixed placement under a budget: some extents resident, the rest streamed.
  CHECK(run({"--weights", "auto", "--cpu-mem", "7M", "--batch-size", "8"}, "d.jsonl") == expected);
  CHECK(run({"--weights", "auto", "--cpu-mem", "3M", "--batch-size", "2", "--prefetch-depth", "0",
             "--refill", "static"},
            "e.jsonl") == expected);
}

TEST_CASE("a checkpoint converted before tensors had checksums streams whole layers, same output") {
  const std::string dir = MakeTempDir("cli-whole-layers");
  const std::string prompts = MixedPromptFile(dir);
  // The same weights file under a manifest without the tensors' checksums, as older zinf wrote.
  const std::filesystem::path old_dir = dir + "/old.zinf";
  std::filesystem::create_directory(old_dir);
  for (const auto& entry : std::filesystem::directory_iterator(ConvertedStories260KDir())) {
    if (entry.path().filename() == "manifest.json") continue;
    std::filesystem::create_symlink(entry.path(), old_dir / entry.path().filename());
  }
  nlohmann::json manifest =
      nlohmann::json::parse(ReadFile(ConvertedStories260KDir() + "/manifest.json"));
  for (auto& extent : manifest["extents"]) {
    for (auto& tensor : extent["tensors"]) tensor.erase("xxh3");
  }
  WriteFile((old_dir / "manifest.json").string(), manifest.dump());
  auto run = [&](const std::string& model, const std::string& name) {
    const CliResult result =
        RunZinf({"generate", "--model", model, "--prompts", prompts, "--out", dir + "/" + name,
                 "--max-new-tokens", "16", "--weights", "stream"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    auto by_id = ById(ReadFile(dir + "/" + name));
    for (auto& [id, object] : by_id) object.erase("line");
    return std::pair(by_id, result.err);
  };
  const auto [parts, parts_log] = run(ConvertedStories260KDir(), "parts.jsonl");
  const auto [whole, whole_log] = run(old_dir.string(), "whole.jsonl");
  CHECK(whole == parts);
  const std::string hint = "converted before tensors had their own checksums";
  CHECK(whole_log.find(hint) != std::string::npos);
  CHECK(parts_log.find(hint) == std::string::npos);
  // stories260K's 5 layers: 12 extents streamed in parts, 7 whole.
  CHECK(parts_log.find("12 streamed") != std::string::npos);
  CHECK(whole_log.find("7 streamed") != std::string::npos);
}

TEST_CASE("JSONL prompts carry per-request settings and prompt_ids") {
  const std::string dir = MakeTempDir("cli-jsonl");
  WriteFile(
      dir + "/p.jsonl",
      R"({"id": "ids", "prompt_ids": [1, 403, 407, 261, 378], "max_new_tokens": 4})"
      "\n"
      R"({"id": "stop", "prompt": "Once upon a time", "stop": ["Lily"]})"
      "\n"
      R"({"id": "sampled", "prompt": "Once upon a time", "temperature": 1.0, "seed": 3, "max_new_tokens": 6})"
      "\n");
  const CliResult result = RunZinf({"generate", "--model", ConvertedStories260KDir(), "--prompts",
                                    dir + "/p.jsonl", "--out", dir + "/o.jsonl"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto by_id = ById(ReadFile(dir + "/o.jsonl"));
  CHECK(by_id.at("ids")["token_ids"] == nlohmann::json({432, 383, 286, 261}));
  CHECK(by_id.at("stop")["finish_reason"] == "stop");
  CHECK(by_id.at("stop")["text"] == ", there was a little girl named ");
  CHECK(by_id.at("sampled")["token_ids"].size() == 6);
}

TEST_CASE("tokenize and detokenize round-trip through JSONL") {
  const CliResult tokens =
      RunZinf({"tokenize", "--model", ConvertedStories260KDir()},
              "{\"text\": \"Once upon a time\"}\n{\"text\": \"Hello\\nworld\"}\n");
  INFO(tokens.err);
  REQUIRE(tokens.exit_code == 0);
  const std::vector<std::string> lines = Lines(tokens.out);
  REQUIRE(lines.size() == 2);
  CHECK(nlohmann::json::parse(lines[0])["ids"] == nlohmann::json({1, 403, 407, 261, 378}));
  CHECK(nlohmann::json::parse(lines[1])["ids"] ==
        nlohmann::json({1, 346, 306, 414, 13, 424, 304, 341}));
  const CliResult no_special =
      RunZinf({"tokenize", "--model", ConvertedStories260KDir(), "--no-special"},
              "{\"text\": \"Once upon a time\"}\n");
  CHECK(nlohmann::json::parse(Lines(no_special.out)[0])["ids"] ==
        nlohmann::json({403, 407, 261, 378}));
  const CliResult text = RunZinf({"detokenize", "--model", ConvertedStories260KDir()},
                                 "{\"ids\": [1, 403, 407, 261, 378]}\n");
  REQUIRE(text.exit_code == 0);
  CHECK(nlohmann::json::parse(Lines(text.out)[0])["text"] == "Once upon a time");
}

TEST_CASE("random Llama-with-biases and OPT checkpoints run through convert and generate") {
  for (const auto& [name, spec] :
       {std::pair{"llama-bias", LlamaWithBiasSpec()}, std::pair{"opt", OptSpec()}}) {
    INFO(name);
    const std::string dir = MakeTempDir(std::string("cli-random-") + name);
    WriteRandomHfCheckpoint(dir + "/hf", spec);
    const CliResult convert = RunZinf({"convert", dir + "/hf", dir + "/zinf"});
    INFO(convert.err);
    REQUIRE(convert.exit_code == 0);
    WriteFile(dir + "/p.txt", "Once upon a time\nThe cat\n");
    const CliResult generate =
        RunZinf({"generate", "--model", dir + "/zinf", "--prompts", dir + "/p.txt", "--out",
                 dir + "/o.jsonl", "--max-new-tokens", "8", "--ignore-eos"});
    INFO(generate.err);
    REQUIRE(generate.exit_code == 0);
    const auto by_id = ById(ReadFile(dir + "/o.jsonl"));
    REQUIRE(by_id.size() == 2);
    CHECK(by_id.at("1")["token_ids"].size() == 8);
  }
}

TEST_CASE("Ctrl-C keeps finished outputs intact and --resume completes the job") {
  const std::string dir = MakeTempDir("cli-interrupt");
  std::string prompts;
  for (int i = 0; i < 60; ++i)
    prompts += "Story number " + std::to_string(i) + " begins: once upon a time\n";
  WriteFile(dir + "/p.txt", prompts);
  const std::vector<std::string> base = {"generate",
                                         "--model",
                                         ConvertedStories260KDir(),
                                         "--prompts",
                                         dir + "/p.txt",
                                         "--max-new-tokens",
                                         "150",
                                         "--batch-size",
                                         "2",
                                         "--weights",
                                         "stream",
                                         "--ignore-eos",
                                         "--threads",
                                         "1"};
  auto with_out = [&](const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = base;
    args.push_back("--out");
    args.push_back(out);
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const CliResult full = RunZinf(with_out(dir + "/full.jsonl"));
  REQUIRE(full.exit_code == 0);

  // Start a run, interrupt it once some outputs exist.
  const std::string out = dir + "/interrupted.jsonl";
  // Up to two minutes: a loaded CI machine (sanitizers, a second suite) can take far longer
  // than the usual second to finish three requests; the wait ends as soon as they exist.
  const int status = InterruptZinfAfterLines(with_out(out), out, 3, SIGINT);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const size_t kept = Lines(ReadFile(out)).size();
  CHECK(kept >= 3);
  CHECK(kept < 60);
  for (const std::string& line : Lines(ReadFile(out))) CHECK_NOTHROW(nlohmann::json::parse(line));

  const CliResult resumed = RunZinf(with_out(out, {"--resume"}));
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  auto strip = [](std::map<std::string, nlohmann::json> by_id) { return by_id; };
  CHECK(strip(ById(ReadFile(out))) == strip(ById(ReadFile(dir + "/full.jsonl"))));
}

}  // namespace zinf::testing
