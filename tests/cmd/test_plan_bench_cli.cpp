// zinf plan, calibrate and bench through the binary.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cpu/probe.h"
#include "tests/cmd/cli_harness.h"
#include "tests/support/random_checkpoint.h"

namespace zinf::testing {

TEST_CASE("zinf plan explains every shipped config under a small and a large DRAM budget") {
  const std::string configs = std::string(ZINF_SOURCE_DIR) + "/configs";
  for (const auto& entry : std::filesystem::directory_iterator(configs)) {
    if (entry.path().extension() != ".json") continue;
    for (const char* budget : {"24G", "128G"}) {
      INFO(entry.path().filename().string() << " with --cpu-mem " << budget);
      const CliResult result =
          RunZinf({"plan", "--config", entry.path().string(), "--cpu-mem", budget, "--batch-size",
                   "1", "--max-context", "512", "--disk-gbps", "3"});
      INFO(result.err);
      REQUIRE(result.exit_code == 0);
      CHECK(result.out.find("predicted") != std::string::npos);
      CHECK(result.out.find("-bound") != std::string::npos);
    }
  }
  // The 405B model's layers are larger than a 2 GiB budget: the error shows the numbers.
  const CliResult too_small =
      RunZinf({"plan", "--config", configs + "/llama-3.1-405b.json", "--cpu-mem", "2G"});
  CHECK(too_small.exit_code != 0);
  CHECK(too_small.err.find("too small") != std::string::npos);
  CHECK(too_small.err.find("GiB") != std::string::npos);
}

TEST_CASE("zinf plan --device cuda plans every shipped config on two GPU machines") {
  const std::string configs = std::string(ZINF_SOURCE_DIR) + "/configs";
  for (const auto& entry : std::filesystem::directory_iterator(configs)) {
    if (entry.path().extension() != ".json") continue;
    for (const auto& [gpu, cpu] : {std::pair{"80G", "24G"}, std::pair{"16G", "128G"}}) {
      INFO(entry.path().filename().string() << " on " << gpu << " GPU + " << cpu << " DRAM");
      const CliResult result =
          RunZinf({"plan", "--config", entry.path().string(), "--device", "cuda", "--gpu-mem", gpu,
                   "--cpu-mem", cpu, "--batch-size", "auto", "--max-context", "1024"});
      INFO(result.err);
      REQUIRE(result.exit_code == 0);
      CHECK(result.out.find("(auto)") != std::string::npos);
      CHECK(result.out.find("device memory used") != std::string::npos);
      CHECK(result.out.find("-bound") != std::string::npos);
    }
  }
  const CliResult no_budget =
      RunZinf({"plan", "--config", configs + "/opt-30b.json", "--device", "cuda"});
  CHECK(no_budget.exit_code != 0);
  CHECK(no_budget.err.find("--device cuda needs --gpu-mem") != std::string::npos);
}

TEST_CASE("zinf plan --kv-dtype f16 / int8 plan with a half / a quarter of the KV cache") {
  // llama-110m in f32, batch 8 × 629 positions: an f32 KV cache (354 MiB) leaves 400 MiB too
  // small; an f16 one (177 MiB) and an int8 one (94 MiB) fit.
  const std::string config = std::string(ZINF_SOURCE_DIR) + "/bench/configs/llama-110m.json";
  const std::vector<std::string> common = {
      "plan",         "--config", config,          "--dtype", "f32",         "--cpu-mem", "400M",
      "--batch-size", "8",        "--max-context", "629",     "--disk-gbps", "2"};
  std::vector<std::string> f32 = common, f16 = common, int8 = common, bad = common, cuda = common;
  f32.insert(f32.end(), {"--kv-dtype", "f32"});
  f16.insert(f16.end(), {"--kv-dtype", "f16"});
  int8.insert(int8.end(), {"--kv-dtype", "int8"});
  bad.insert(bad.end(), {"--kv-dtype", "bf16"});
  cuda.insert(cuda.end(), {"--kv-dtype", "f16", "--device", "cuda", "--gpu-mem", "8G"});
  const CliResult f32_result = RunZinf(f32);
  CHECK(f32_result.exit_code != 0);
  CHECK(f32_result.err.find("too small") != std::string::npos);
  const CliResult int8_result = RunZinf(int8);
  INFO(int8_result.err);
  CHECK(int8_result.exit_code == 0);
  CHECK(int8_result.out.find("KV cache int8") != std::string::npos);
  const CliResult f16_result = RunZinf(f16);
  INFO(f16_result.err);
  CHECK(f16_result.exit_code == 0);
  CHECK(f16_result.out.find("KV cache f16") != std::string::npos);
  const CliResult bad_result = RunZinf(bad);
  CHECK(bad_result.exit_code != 0);
  CHECK(bad_result.err.find("--kv-dtype: 'bf16' is not one of f32, f16, int8") !=
        std::string::npos);
  const CliResult cuda_result = RunZinf(cuda);  // a CPU cache format, refused before any work
  CHECK(cuda_result.exit_code != 0);
  CHECK(cuda_result.err.find("--kv-dtype f16 is a CPU cache format") != std::string::npos);
}

TEST_CASE("zinf plan on a model that fits says offload is pointless") {
  const CliResult result = RunZinf({"plan", "--model", ConvertedStories260KDir()});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("nothing is offloaded") != std::string::npos);
}

TEST_CASE("zinf calibrate caches measured rates that plan then uses") {
  const std::string cache = MakeTempDir("calibration-cache");
  const auto with_cache = [&] { setenv("XDG_CACHE_HOME", cache.c_str(), 1); };
  // Calibrates with `threads` threads and returns the cache it leaves.
  const auto calibrate = [&](const std::string& threads) {
    const CliResult result =
        RunZinf({"calibrate", "--file", ConvertedStories260KDir() + "/weights.bin", "--threads",
                 threads, "--small-probes"},
                "", with_cache);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(ReadFile(cache + "/zinf/calibration.json"));
  };
  const nlohmann::json rates = calibrate("1");
  CHECK(rates["disk_read_gbps"].get<double>() > 0);
  CHECK(rates["dram_read_gbps"].get<double>() > 0);
  // The stored rate is the median of the probe's passes, stored with their spread.
  CHECK(rates["dram_read_spread_gbps"][0].get<double>() <= rates["dram_read_gbps"].get<double>());
  CHECK(rates["dram_read_spread_gbps"][1].get<double>() >= rates["dram_read_gbps"].get<double>());
  CHECK(rates["compute_gflops"].get<double>() > 0);
  CHECK(rates["dram_probe"].get<int>() == cpu::kDramProbeVersion);
  CHECK(rates["int8_gflops"].get<double>() > 0);
  CHECK(rates["int4_gflops"].get<double>() > 0);
  CHECK(rates["checksum_gbps"].get<double>() > 0);
  // Each format's products at each measured size: sizes ascending from one token.
  for (const char* format : {"f32", "f16", "int8", "int4", "int4_g32", "int4_g128"}) {
    INFO(format);
    const nlohmann::json& sizes = rates["matmul_gflops_by_tokens"][format];
    REQUIRE(sizes.size() == 5);
    CHECK(sizes[0][0].get<int>() == 1);
    for (size_t i = 0; i < sizes.size(); ++i) {
      CHECK(sizes[i][1].get<double>() > 0);
      if (i > 0) CHECK(sizes[i][0].get<int>() > sizes[i - 1][0].get<int>());
    }
  }
  const CliResult plan =
      RunZinf({"plan", "--model", ConvertedStories260KDir(), "--threads", "1"}, "", with_cache);
  CHECK(plan.out.find("measured by zinf calibrate") != std::string::npos);
  CHECK(plan.err.find("measured the CPU's rates") == std::string::npos);
  // Rates measured with one thread do not predict three: the run says so.
  const CliResult three_threads =
      RunZinf({"plan", "--model", ConvertedStories260KDir(), "--threads", "3"}, "", with_cache);
  REQUIRE(three_threads.exit_code == 0);
  CHECK(three_threads.err.find("measured the CPU's rates with 1 thread; this run uses 3") !=
        std::string::npos);
  CHECK(three_threads.err.find("zinf calibrate --threads 3") != std::string::npos);

  // Calibrating another thread count keeps the first count's rates beside its own, and a run
  // with either count predicts with that count's.
  const nlohmann::json both = calibrate("2");
  CHECK(both["threads"].get<int>() == 2);
  REQUIRE(both["cpu_rates_by_threads"].size() == 2);
  CHECK(both["cpu_rates_by_threads"]["1"]["compute_gflops"] == rates["compute_gflops"]);
  CHECK(both["cpu_rates_by_threads"]["1"]["matmul_gflops_by_tokens"] ==
        rates["matmul_gflops_by_tokens"]);
  CHECK(both["cpu_rates_by_threads"]["2"]["compute_gflops"] == both["compute_gflops"]);
  for (const char* threads : {"1", "2"}) {
    const CliResult plan_threads = RunZinf(
        {"plan", "--model", ConvertedStories260KDir(), "--threads", threads}, "", with_cache);
    INFO("--threads " << threads << "\n" << plan_threads.out << plan_threads.err);
    REQUIRE(plan_threads.exit_code == 0);
    CHECK(plan_threads.out.find(std::string("measured by zinf calibrate with ") + threads +
                                " thread") != std::string::npos);
    CHECK(plan_threads.err.find("measured the CPU's rates") == std::string::npos);
  }
  const CliResult after_two =
      RunZinf({"plan", "--model", ConvertedStories260KDir(), "--threads", "3"}, "", with_cache);
  CHECK(after_two.err.find("measured the CPU's rates with 2 threads; this run uses 3") !=
        std::string::npos);
  // What calibrate cannot read in an earlier cache is written over, not a failure.
  std::ofstream(cache + "/zinf/calibration.json")
      << R"({"dram_probe": "old", "cpu_rates_by_threads": [1, 2]})";
  const nlohmann::json rewritten = calibrate("2");
  CHECK(rewritten["cpu_rates_by_threads"].size() == 1);
  CHECK(rewritten["cpu_rates_by_threads"].contains("2"));

  // A size table that cannot be read off is set aside with a warning; the rest still serves. (A
  // cache from before the rates were kept by thread count: the top level's serve every count.)
  nlohmann::json unordered = rates;
  unordered.erase("cpu_rates_by_threads");
  unordered["matmul_gflops_by_tokens"]["f32"] = {{8, 100.0}, {1, 10.0}};
  std::ofstream(cache + "/zinf/calibration.json") << unordered.dump();
  const CliResult unordered_plan =
      RunZinf({"plan", "--model", ConvertedStories260KDir()}, "", with_cache);
  REQUIRE(unordered_plan.exit_code == 0);
  CHECK(unordered_plan.out.find("measured by zinf calibrate") != std::string::npos);
  CHECK(unordered_plan.err.find("ignoring the calibration cache's f32 product rates") !=
        std::string::npos);

  // A cache from an older DRAM probe (none stored its version) is not trusted.
  nlohmann::json stale = rates;
  stale.erase("dram_probe");
  std::ofstream(cache + "/zinf/calibration.json") << stale.dump();
  const CliResult stale_plan =
      RunZinf({"plan", "--model", ConvertedStories260KDir()}, "", with_cache);
  REQUIRE(stale_plan.exit_code == 0);
  CHECK(stale_plan.out.find("measured by zinf calibrate") == std::string::npos);
  CHECK(stale_plan.err.find("older probe; run zinf calibrate") != std::string::npos);
}

TEST_CASE("calibrate --dram-only prints the probe's median and spread and leaves the cache alone") {
  const std::string cache = MakeTempDir("calibration-dram-only");
  const auto with_cache = [&] { setenv("XDG_CACHE_HOME", cache.c_str(), 1); };
  const CliResult probe = RunZinf(
      {"calibrate", "--dram-only", "--threads", "1", "--small-probes", "-q"}, "", with_cache);
  INFO(probe.err);
  REQUIRE(probe.exit_code == 0);
  const nlohmann::json rate = nlohmann::json::parse(probe.out);
  CHECK(rate["passes"].get<int>() == 9);
  CHECK(rate["threads"].get<int>() == 1);
  CHECK(rate["min_gbps"].get<double>() > 0);
  CHECK(rate["min_gbps"].get<double>() <= rate["dram_read_gbps"].get<double>());
  CHECK(rate["dram_read_gbps"].get<double>() <= rate["max_gbps"].get<double>());
  CHECK_FALSE(std::filesystem::exists(cache + "/zinf/calibration.json"));
}

TEST_CASE(
    "a GPU's calibrated rates reach a CUDA plan; a CPU-only calibration leaves them assumed") {
  const std::string cache = MakeTempDir("calibration-gpu");
  const auto with_cache = [&] { setenv("XDG_CACHE_HOME", cache.c_str(), 1); };
  nlohmann::json rates = {{"dram_probe", cpu::kDramProbeVersion},
                          {"disk_read_gbps", 3.5},
                          {"dram_read_gbps", 40.0},
                          {"compute_gflops", 500.0},
                          {"int8_gflops", 600.0},
                          {"int4_gflops", 400.0}};
  std::filesystem::create_directories(cache + "/zinf");
  const auto plan = [&] {
    std::ofstream(cache + "/zinf/calibration.json") << rates.dump();
    return RunZinf(
        {"plan", "--model", ConvertedStories260KDir(), "--device", "cuda", "--gpu-mem", "64M"}, "",
        with_cache);
  };
  const CliResult cpu_only = plan();
  INFO(cpu_only.err);
  REQUIRE(cpu_only.exit_code == 0);
  CHECK(cpu_only.out.find("PCIe 25.0 GB/s") != std::string::npos);
  CHECK(cpu_only.out.find("assumed unless given") != std::string::npos);

  rates["h2d_gbps"] = 54.8;  // as `zinf calibrate` measured on an H100 (PCIe 5.0 x16)
  rates["device_gbps"] = 2900.0;
  rates["device_tflops"] = 650.0;
  rates["gpu_layer_launch_seconds"] = 1e-3;  // the kernels' costs: the plan's step adds them
  rates["gpu_attention_lone_key_seconds"] = 0.5e-6;
  rates["gpu_attention_key_seconds"] = 2e-6;
  rates["gpu_attention_wave_blocks"] = 512;
  rates["gpu_dequant_i8_seconds"] = 3e-12;
  rates["gpu_dequant_q4_seconds"] = 7e-12;
  rates["gpu_logits_d2h_gbps"] = 2.5;
  rates["host_sample_seconds_per_logit"] = 1.5e-9;
  const CliResult with_gpu = plan();
  INFO(with_gpu.err);
  REQUIRE(with_gpu.exit_code == 0);
  CHECK(with_gpu.out.find("PCIe 54.8 GB/s, device memory 2900 GB/s, device 650 TFLOP/s "
                          "(zinf calibrate's") != std::string::npos);
  CHECK(with_gpu.out.find("a layer's launches 1000 us, attention 0.50 us per key alone and 2.00 "
                          "in a wave of 512 walks, dequantisation to bf16 3.0 / 7.0 ps per int8 / "
                          "int4 weight, logits to the host 2.5 GB/s and picked in 1.50 ns") !=
        std::string::npos);
  // stories260K: 5 layers and one layer's worth for the embedding and the head.
  CHECK(with_gpu.out.find("launches 0.006 s") != std::string::npos);
}

TEST_CASE("zinf bench writes a table, CSV, JSON and a PNG plot") {
  const std::string dir = MakeTempDir("bench-cli");
  const CliResult result =
      RunZinf({"bench", "--model", ConvertedStories260KDir(), "--batch-size", "1,3", "--prompt-len",
               "8", "--gen-len", "4", "--weights", "resident,stream", "--repeat", "2", "--csv",
               dir + "/b.csv", "--json", dir + "/b.json", "--plot", dir + "/b.png"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(Lines(result.out).size() == 2 + 4);  // header, rule, 2 placements × 2 batch sizes
  CHECK(Lines(ReadFile(dir + "/b.csv")).size() == 1 + 4);
  const nlohmann::json rows = nlohmann::json::parse(ReadFile(dir + "/b.json"));
  REQUIRE(rows.size() == 4);
  for (const auto& row : rows) {
    CHECK(row["decode_tok_s"]["mean"].get<double>() > 0);
    CHECK(row["repeats"] == 2);
  }
  CHECK(rows[2]["weights"] == "stream");
  CHECK(rows[2]["disk_gbps"]["mean"].get<double>() > 0);   // streaming reads the file every step
  CHECK(rows[0]["disk_gbps"]["mean"].get<double>() == 0);  // resident does not
  CHECK(ReadFile(dir + "/b.png").substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST_CASE("zinf bench refuses a --plot it cannot write before it measures anything") {
  const std::string dir = MakeTempDir("bench-bad-plot");
  for (const std::string& plot : {dir + "/out.bmp", dir + "/missing/out.png"}) {
    const CliResult result =
        RunZinf({"bench", "--model", ConvertedStories260KDir(), "--batch-size", "1", "--prompt-len",
                 "8", "--gen-len", "4", "--repeat", "1", "--plot", plot});
    INFO(result.err);
    CHECK(result.exit_code != 0);
    CHECK(result.err.find("--plot " + plot) != std::string::npos);
    CHECK(result.out.empty());                                      // no table
    CHECK(result.err.find("weights, batch") == std::string::npos);  // no configuration ran
  }
  // Checked before the model is read: the plot is what it reports, not the missing model.
  const CliResult result =
      RunZinf({"bench", "--model", dir + "/no-model", "--plot", dir + "/out.bmp"});
  CHECK(result.exit_code != 0);
  CHECK(result.err.find("--plot") != std::string::npos);
  CHECK(result.err.find("no-model") == std::string::npos);
}

}  // namespace zinf::testing
