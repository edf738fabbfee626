// --device as a user meets it: a bad name is refused, and --device cuda either runs (a GPU and a
// CUDA build) or fails with an error that says why and offers --device cpu — never a crash.
#include <catch2/catch.hpp>

#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

using Catch::Matchers::Contains;

namespace {

// generate on stories260K with a 4-token continuation of one prompt, its prompt file in dir.
std::vector<std::string> GenerateArgs(const std::string& dir) {
  WriteFile(dir + "/prompts.txt", "Once upon a time\n");
  return {
      "generate",         "--model", ConvertedStories260KDir(), "--prompts", dir + "/prompts.txt",
      "--max-new-tokens", "4"};
}

// Runs `base` + `cuda_args` (a --device cuda configuration writing dir/name.jsonl): with a GPU it
// must give the CPU backend's output; without one, an error that says why and offers --device cpu.
void CheckCudaMatchesCpuOrExplains(const std::vector<std::string>& base, const std::string& dir,
                                   const std::string& name,
                                   const std::vector<std::string>& cuda_args) {
  std::vector<std::string> cuda = base;
  cuda.insert(cuda.end(), {"--out", dir + "/" + name + ".jsonl"});
  cuda.insert(cuda.end(), cuda_args.begin(), cuda_args.end());
  const CliResult result = RunZinf(cuda);
  if (result.exit_code == 0) {
    std::vector<std::string> cpu = base;
    cpu.insert(cpu.end(), {"--out", dir + "/cpu.jsonl"});
    REQUIRE(RunZinf(cpu).exit_code == 0);
    CHECK(ReadFile(dir + "/" + name + ".jsonl") == ReadFile(dir + "/cpu.jsonl"));
  } else {
    CHECK_THAT(result.err, Contains("--device cuda") && Contains("--device cpu"));
    CHECK_THAT(result.err, !Contains("internal error"));
  }
}

}  // namespace

TEST_CASE("generate --device: unknown names refused, cuda runs or explains itself") {
  const std::string dir = MakeTempDir("cli-device");
  const std::vector<std::string> base = GenerateArgs(dir);
  std::vector<std::string> tpu = base;
  tpu.insert(tpu.end(), {"--out", dir + "/tpu.jsonl", "--device", "tpu"});
  const CliResult bad = RunZinf(tpu);
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Contains("--device: 'tpu' is not one of cpu, cuda"));

  std::vector<std::string> compute = base;
  compute.insert(compute.end(),
                 {"--out", dir + "/c.jsonl", "--device", "cuda", "--gpu-compute", "fp8"});
  const CliResult bad_compute = RunZinf(compute);
  CHECK(bad_compute.exit_code != 0);
  CHECK_THAT(bad_compute.err, Contains("--gpu-compute: 'fp8' is not one of bf16, f32"));

  // With a GPU the CPU backend's tokens; without, an error that explains.
  CheckCudaMatchesCpuOrExplains(base, dir, "cuda", {"--device", "cuda", "--gpu-compute", "f32"});
}

TEST_CASE("generate --kv-offload: cpu needs --device cuda; with a GPU it gives the same tokens") {
  const std::string dir = MakeTempDir("cli-kv-offload");
  const std::vector<std::string> base = GenerateArgs(dir);
  std::vector<std::string> on_cpu = base;
  on_cpu.insert(on_cpu.end(), {"--out", dir + "/a.jsonl", "--kv-offload", "cpu"});
  const CliResult cpu_device = RunZinf(on_cpu);
  CHECK(cpu_device.exit_code != 0);
  CHECK_THAT(cpu_device.err, Contains("--kv-offload cpu") && Contains("--device cpu"));

  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--out", dir + "/b.jsonl", "--device", "cuda", "--kv-offload", "disk"});
  const CliResult bad_name = RunZinf(bad);
  CHECK(bad_name.exit_code != 0);
  CHECK_THAT(bad_name.err, Contains("--kv-offload: 'disk' is not one of none, cpu"));

  // With a GPU the CPU's attention over the offloaded cache gives the CPU backend's tokens.
  CheckCudaMatchesCpuOrExplains(
      base, dir, "offload", {"--device", "cuda", "--gpu-compute", "f32", "--kv-offload", "cpu"});
}

}  // namespace zinf::testing
