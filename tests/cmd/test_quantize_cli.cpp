// The quantization workflow as a user runs it: convert --dtype int8/int4, generate from the
// result, and zinf perplexity with its JSON output and its errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

using Catch::Matchers::Contains;

const std::string kStories = std::string(ZINF_SOURCE_DIR) + "/models/stories260K";
const std::string kText = std::string(ZINF_SOURCE_DIR) + "/bench/data/stories260k-sampled.txt";

}  // namespace

TEST_CASE("convert --dtype int4 then generate and perplexity from the quantized checkpoint") {
  const std::string dir = MakeTempDir("cli-int4");
  const CliResult convert = RunZinf({"convert", kStories, dir + "/q4", "--dtype", "int4",
                                     "--group-size", "32", "--keep-float", "head"});
  REQUIRE(convert.exit_code == 0);
  WriteFile(dir + "/prompts.txt", "Once upon a time\nThe dog\n");
  const CliResult generate =
      RunZinf({"generate", "--model", dir + "/q4", "--prompts", dir + "/prompts.txt", "--out",
               dir + "/out.jsonl", "--max-new-tokens", "8", "--kv-dtype", "int8"});
  REQUIRE(generate.exit_code == 0);
  CHECK_THAT(generate.err, Contains("int4-g32 (f32 norms)"));
  CHECK(Lines(ReadFile(dir + "/out.jsonl")).size() == 2);

  // A slice of the measured text keeps the test quick.
  WriteFile(dir + "/text.txt", ReadFile(kText).substr(0, 3000));
  const CliResult perplexity =
      RunZinf({"perplexity", "--model", dir + "/q4", "--text", dir + "/text.txt", "--context",
               "128", "--json", dir + "/ppl.json"});
  REQUIRE(perplexity.exit_code == 0);
  CHECK_THAT(perplexity.out, Contains("perplexity "));
  const nlohmann::json result = nlohmann::json::parse(ReadFile(dir + "/ppl.json"));
  CHECK(result["stride"] == 64);
  CHECK(result["perplexity"].get<double>() > 1.0);
  CHECK(result["perplexity"].get<double>() < 20.0);
  CHECK(result["weights"] == "int4-g32 (f32 norms)");
  CHECK(result["kv_dtype"] == "f32");  // a name, not the enum's number
}

TEST_CASE("quantization options that cannot work are refused with the option named") {
  const std::string dir = MakeTempDir("cli-quant-bad");
  const CliResult group =
      RunZinf({"convert", kStories, dir + "/a", "--dtype", "int4", "--group-size", "48"});
  CHECK(group.exit_code != 0);
  CHECK_THAT(group.err, Contains("--group-size: 48 is not supported for int4"));
  const CliResult keep =
      RunZinf({"convert", kStories, dir + "/b", "--dtype", "int8", "--keep-float", "ffn_norm"});
  CHECK(keep.exit_code != 0);
  CHECK_THAT(keep.err, Contains("--keep-float: 'ffn_norm' is not a weight matrix"));
  const CliResult kv = RunZinf(
      {"perplexity", "--model", ConvertedStories260KDir(), "--text", kText, "--kv-dtype", "int2"});
  CHECK(kv.exit_code != 0);
  CHECK_THAT(kv.err, Contains("--kv-dtype: 'int2' is not one of f32, f16, int8"));
}

}  // namespace zinf::testing
