// The command line itself: every bad flag value is refused while parsing (exit 2, naming the flag)
// before anything is loaded; --help and --version exit 0; an unknown command is named; the global
// flags work before or after the command.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

namespace {

using Catch::Contains;

constexpr int kExitUsage = 2;  // cmd/exit_codes.h

// A flag and a value it must refuse, with what the message must say.
struct BadFlag {
  std::vector<std::string> args;  // appended to the command's required ones
  std::string says;
};

// Runs `zinf COMMAND REQUIRED... BAD...` and checks the usage exit and message. The required
// arguments name a model that does not exist, so a run that got past parsing would fail
// naming it instead.
void CheckRefused(const std::vector<std::string>& command, const BadFlag& bad) {
  std::vector<std::string> args = command;
  args.insert(args.end(), bad.args.begin(), bad.args.end());
  INFO("zinf " << Catch::Detail::stringify(args));
  const CliResult result = RunZinf(args);
  INFO(result.err);
  CHECK(result.exit_code == kExitUsage);
  CHECK_THAT(result.err, Contains(bad.says));
  CHECK_THAT(result.err, !Contains("no-such-model"));
}

}  // namespace

TEST_CASE("bad generate flags exit 2 naming the flag, before the model is opened") {
  const std::string dir = MakeTempDir("cli-flags-generate");
  const std::vector<std::string> generate = {
      "generate",     "--model", dir + "/no-such-model", "--prompts",
      dir + "/p.txt", "--out",   dir + "/o.jsonl"};
  const std::vector<BadFlag> bad = {
      {{"--max-new-tokens", "0"}, "--max-new-tokens: must be an integer >= 1"},
      {{"--max-new-tokens", "1.5"}, "--max-new-tokens: must be an integer >= 1"},
      {{"--top-p", "2"}, "--top-p: must be in (0, 1] (1 means off), got 2"},
      {{"--top-p", "0"}, "--top-p: must be in (0, 1]"},
      {{"--min-p", "1.5"}, "--min-p: must be in [0, 1]"},
      {{"--temperature", "nan"}, "--temperature: must be a finite number >= 0"},
      {{"--temperature", "-1"}, "--temperature: must be a finite number >= 0"},
      {{"--temperature", "inf"}, "--temperature: must be a finite number >= 0"},
      {{"--temperature", "warm"}, "--temperature: 'warm' is not a number"},
      {{"--top-k", "-1"}, "--top-k: must be an integer >= 0"},
      {{"--repetition-penalty", "0"}, "--repetition-penalty: must be a finite number > 0"},
      {{"--logprobs", "-1"}, "--logprobs: must be an integer >= 0"},
      {{"--threads", "0"}, "--threads: must be an integer >= 1 (leave the flag out for all cores)"},
      {{"--step-tokens", "0"}, "--step-tokens: must be an integer >= 1"},
      {{"--micro-batch-tokens", "-1"}, "--micro-batch-tokens: must be an integer >= 0"},
      {{"--max-context", "0"}, "--max-context: must be an integer >= 1"},
      {{"--prefetch-depth", "-1"}, "--prefetch-depth: must be an integer >= 0"},
      {{"--gpu", "-1"}, "--gpu: must be an integer >= 0"},
      {{"--cpu-mem", "12X"}, "--cpu-mem: unknown unit in '12X'"},
      {{"--gpu-mem", "lots"}, "--gpu-mem: 'lots' is not a size"},
      {{"--batch-size", "0"}, "--batch-size: '0' is not 'auto' or a positive integer"},
      {{"--device", "tpu"}, "--device: 'tpu' is not one of cpu, cuda"},
      {{"--kv-dtype", "int2"}, "--kv-dtype: 'int2' is not one of f32, f16, int8"},
      {{"--weights", "mmap"}, "--weights: 'mmap' is not one of auto, resident, stream"},
      {{"--refill", "eager"}, "--refill: 'eager' is not one of continuous, static"},
      {{"--progress-every", "nan"}, "--progress-every: must be a finite number >= 0"},
      {{"--log-level", "loud"}, "--log-level: 'loud' is not one of"},
      {{"--no-such-flag"}, "--no-such-flag"},
  };
  for (const BadFlag& flag : bad) CheckRefused(generate, flag);
}

TEST_CASE("bad flags of the other commands exit 2 naming the flag") {
  const std::string dir = MakeTempDir("cli-flags-other");
  const std::string model = dir + "/no-such-model";
  const std::vector<std::string> bench = {"bench", "--model", model};
  CheckRefused(bench, {{"--repeat", "0"}, "--repeat: must be an integer >= 1"});
  CheckRefused(bench, {{"--num-prompts", "0"}, "--num-prompts: must be an integer >= 1"});
  CheckRefused(bench, {{"--prompt-len", "32,x"}, "--prompt-len: 'x' is not a length"});
  CheckRefused(bench, {{"--gen-len", "9:3"}, "--gen-len: '9:3' is not a valid length"});
  CheckRefused(bench, {{"--batch-size", "1,0"}, "--batch-size: '0' is not 'auto'"});
  CheckRefused(bench, {{"--weights", "auto,mmap"}, "--weights: 'mmap' is not one of"});
  CheckRefused(bench, {{"--prefetch-depth", "0,-2"}, "--prefetch-depth: must be an integer >= -1"});
  CheckRefused(bench, {{"--threads", "0"}, "--threads: must be an integer >= 1"});
  const std::vector<std::string> perplexity = {"perplexity", "--model", model, "--text",
                                               dir + "/t.txt"};
  CheckRefused(perplexity, {{"--context", "1"}, "--context: must be an integer >= 2"});
  CheckRefused(perplexity, {{"--stride", "0"}, "--stride: must be an integer >= 1"});
  CheckRefused(perplexity, {{"--step-tokens", "0"}, "--step-tokens: must be an integer >= 1"});
  const std::vector<std::string> plan = {"plan", "--model", model};
  CheckRefused(plan, {{"--disk-gbps", "0"}, "--disk-gbps: must be a finite number > 0"});
  CheckRefused(plan, {{"--tflops", "nan"}, "--tflops: must be a finite number > 0"});
  CheckRefused(plan, {{"--dtype", "f8"}, "--dtype: 'f8' is not one of f32, f16, bf16"});
  CheckRefused(plan, {{"--cpu-mem", "-3G"}, "--cpu-mem: '-3G' is not a size"});
  CheckRefused({"calibrate"}, {{"--threads", "0"}, "--threads: must be an integer >= 1"});
  const std::vector<std::string> convert = {"convert", model, dir + "/out"};
  CheckRefused(convert, {{"--dtype", "f8"}, "--dtype: 'f8' is not one of"});
  CheckRefused(convert, {{"--group-size", "0"}, "--group-size: must be an integer >= 1"});
  CheckRefused(convert, {{"--synthetic", dir + "/c.json"}, "--synthetic writes weights"});
  CheckRefused({"convert"}, {{dir + "/out"}, "convert needs SRC and DST"});
  CheckRefused({"convert"}, {{}, "convert needs SRC and DST"});
}

TEST_CASE("a prompt-file field and its flag are refused in the same words") {
  const std::string dir = MakeTempDir("cli-flags-same-words");
  WriteFile(dir + "/p.jsonl", "{\"prompt\": \"Once\", \"top_p\": 2}\n");
  const CliResult field = RunZinf({"generate", "--model", ConvertedStories260KDir(), "--prompts",
                                   dir + "/p.jsonl", "--out", dir + "/o.jsonl"});
  CHECK(field.exit_code != 0);
  CHECK_THAT(field.err, Contains("p.jsonl:1: top_p must be in (0, 1] (1 means off), got 2"));
  const CliResult flag = RunZinf({"generate", "--model", ConvertedStories260KDir(), "--prompts",
                                  dir + "/p.jsonl", "--top-p", "2"});
  CHECK(flag.exit_code == kExitUsage);
  CHECK_THAT(flag.err, Contains("--top-p: must be in (0, 1] (1 means off), got 2"));
}

TEST_CASE("convert takes SRC DST, or DST alone with --synthetic") {
  const std::string dir = MakeTempDir("cli-convert-paths");
  const std::string config = std::string(ZINF_SOURCE_DIR) + "/models/stories260K/config.json";
  const CliResult synthetic = RunZinf({"convert", "--synthetic", config, dir + "/synthetic", "-q"});
  INFO(synthetic.err);
  CHECK(synthetic.exit_code == 0);
  CHECK(ReadFile(dir + "/synthetic/manifest.json").size() > 0);
  const CliResult both = RunZinf({"convert", "--synthetic", config, dir + "/a", dir + "/b"});
  CHECK(both.exit_code == kExitUsage);
  CHECK_THAT(both.err, Contains("it takes no SRC"));
}

TEST_CASE("--help exits 0 with every option described") {
  const CliResult main_help = RunZinf({"--help"});
  CHECK(main_help.exit_code == 0);
  CHECK_THAT(main_help.out, Contains("generate") && Contains("--version") && Contains("-q"));
  for (const char* command :
       {"generate", "bench", "perplexity", "plan", "convert", "calibrate", "tokenize"}) {
    INFO(command);
    const CliResult help = RunZinf({command, "--help"});
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Contains("Global flags (before or after the command)"));
  }
  const CliResult generate = RunZinf({"generate", "--help"});
  CHECK_THAT(generate.out, Contains("most tokens generated per request") &&
                               Contains("a probability in (0, 1]") &&
                               Contains("a fraction in [0, 1]") && Contains("[0, 2^64)"));
  const CliResult convert = RunZinf({"convert", "--help"});
  CHECK_THAT(convert.out, Contains("SRC") && Contains("DST") && !Contains("paths"));
}

TEST_CASE("an unknown command is named, with the list") {
  const CliResult result = RunZinf({"frobnicate", "--model", "x"});
  CHECK(result.exit_code == kExitUsage);
  CHECK_THAT(result.err, Contains("unknown subcommand 'frobnicate'; commands: convert, generate"));
  CHECK_THAT(result.err, Contains("perplexity"));
  const CliResult after_flag = RunZinf({"--log-level", "warn", "frobnicate"});
  CHECK(after_flag.exit_code == kExitUsage);
  CHECK_THAT(after_flag.err, Contains("unknown subcommand 'frobnicate'"));
  const CliResult none = RunZinf({});
  CHECK(none.exit_code == kExitUsage);
  CHECK_THAT(none.err, Contains("a command is required; commands: convert"));
}

TEST_CASE("--version names the build, the CPU kernel level and CUDA") {
  const CliResult result = RunZinf({"--version"});
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::StartsWith("zinf 0."));
  CHECK_THAT(result.out, Contains("build:") && Contains("git commit") && Contains("cpu isa:") &&
                             Contains("cuda:"));
  CHECK_THAT(result.out, Contains("portable") || Contains("avx2") || Contains("avx512") ||
                              Contains("amx"));
  const CliResult capped =
      RunZinf({"--version"}, "", [] { setenv("ZINF_CPU_ISA", "portable", 1); });
  CHECK_THAT(capped.out, Contains("cpu isa: portable"));
  // After a command too, as every global flag.
  CHECK(RunZinf({"tokenize", "--version"}).exit_code == 0);
}

TEST_CASE("-q, -v and --log-level work before or after the command") {
  const std::string model = ConvertedStories260KDir();
  const std::string text = "{\"text\": \"Once upon a time\"}\n";
  const CliResult plain = RunZinf({"tokenize", "--model", model}, text);
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.err, !Contains("[debug]"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tokenize", "--model", model, "-v"},
        std::vector<std::string>{"-v", "tokenize", "--model", model},
        std::vector<std::string>{"tokenize", "--model", model, "--log-level", "debug"}}) {
    const CliResult verbose = RunZinf(args, text);
    CHECK(verbose.exit_code == 0);
    CHECK_THAT(verbose.err, Contains("[debug] zinf 0.") && !Contains("[trace]"));
    CHECK(verbose.out == plain.out);
  }
  const CliResult trace = RunZinf({"tokenize", "--model", model, "-vv"}, text);
  CHECK_THAT(trace.err, Contains("[trace] command line:"));
  const std::string dir = MakeTempDir("cli-flags-quiet");
  WriteFile(dir + "/p.txt", "Once upon a time\n");
  const CliResult quiet = RunZinf(
      {"generate", "--model", model, "--prompts", dir + "/p.txt", "--max-new-tokens", "2", "-q"});
  CHECK(quiet.exit_code == 0);
  CHECK_THAT(quiet.err, !Contains("[info]"));
  const CliResult both = RunZinf({"tokenize", "--model", model, "-q", "-v"}, text);
  CHECK(both.exit_code == kExitUsage);
  CHECK_THAT(both.err, Contains("excludes"));
}

}  // namespace zinf::testing
