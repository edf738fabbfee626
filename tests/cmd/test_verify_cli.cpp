// zinf verify: every checksum checked in one read; --add-tensor-checksums upgrades an older
// checkpoint's manifest to what the converter writes today, and never a corrupt one's.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

// A copy of the converted stories260K whose manifest lacks the tensors' checksums, as older
// converters wrote it.
std::string OlderCopy(const std::string& name) {
  const std::string dir = MakeTempDir(name) + "/model.zinf";
  std::filesystem::copy(ConvertedStories260KDir(), dir, std::filesystem::copy_options::recursive);
  nlohmann::ordered_json manifest = nlohmann::ordered_json::parse(ReadFile(dir + "/manifest.json"));
  for (auto& extent : manifest["extents"]) {
    for (auto& tensor : extent["tensors"]) tensor.erase("xxh3");
  }
  WriteFile(dir + "/manifest.json", manifest.dump(2) + "\n");
  return dir;
}

}  // namespace

TEST_CASE("verify checks every checksum and adds the tensors' to an older manifest") {
  CliResult result = RunZinf({"verify", ConvertedStories260KDir()});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("all 7 extents") != std::string::npos);
  CHECK(result.out.find("every tensor its own") != std::string::npos);

  const std::string older = OlderCopy("verify-older");
  const std::string before = ReadFile(older + "/manifest.json");
  result = RunZinf({"verify", older});
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("48 tensors have no checksum") != std::string::npos);
  CHECK(ReadFile(older + "/manifest.json") == before);  // only --add-tensor-checksums writes

  // A job run on it before...
  const std::string prompts = older + "/../prompts.txt", out = older + "/../out.jsonl";
  WriteFile(prompts, "Once upon a time\nThe sun\n");
  const std::vector<std::string> job = {
      "generate", "--model", older, "--prompts", prompts, "--out", out, "--max-new-tokens", "8"};
  REQUIRE(RunZinf(job).exit_code == 0);

  result = RunZinf({"verify", older, "--add-tensor-checksums"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("wrote the checksums of 48 tensors") != std::string::npos);
  // The manifest the converter writes today, byte for byte.
  CHECK(ReadFile(older + "/manifest.json") ==
        ReadFile(ConvertedStories260KDir() + "/manifest.json"));
  // ...resumes after it: the tensors' checksums do not make it another model.
  std::vector<std::string> resume = job;
  resume.push_back("--resume");
  result = RunZinf(resume);
  INFO(result.err);
  CHECK(result.exit_code == 0);
}

TEST_CASE("verify names a corrupt extent and leaves its manifest alone") {
  const std::string older = OlderCopy("verify-corrupt");
  const std::string before = ReadFile(older + "/manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(before);
  const nlohmann::json& layer1 = manifest["extents"][2];
  REQUIRE(layer1["name"] == "layer.1");
  {
    std::fstream weights(older + "/weights.bin", std::ios::binary | std::ios::in | std::ios::out);
    const auto at = static_cast<std::streamoff>(layer1["offset"].get<uint64_t>() + 100);
    weights.seekg(at);
    char byte = 0;
    weights.read(&byte, 1);
    byte = static_cast<char>(byte ^ 1);
    weights.seekp(at);
    weights.write(&byte, 1);
  }
  const CliResult result = RunZinf({"verify", older, "--add-tensor-checksums"});
  INFO(result.err);
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("checksum mismatch") != std::string::npos);
  CHECK(result.err.find("extent layer.1 at byte") != std::string::npos);
  CHECK(result.err.find("convert again") != std::string::npos);
  CHECK(ReadFile(older + "/manifest.json") == before);
}

}  // namespace zinf::testing
