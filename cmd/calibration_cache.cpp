// The calibration cache's JSON: written by zinf calibrate, read by every plan.
#include "cmd/calibration_cache.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "cpu/probe.h"

namespace zinf::cli {

namespace fs = std::filesystem;

namespace {

// The GPU's rates as the cache stores them; a calibration without a GPU stores none.
constexpr std::pair<const char*, double Bandwidths::*> kGpuRates[] = {
    {"h2d_gbps", &Bandwidths::h2d_gbps},
    {"device_gbps", &Bandwidths::device_gbps},
    {"device_tflops", &Bandwidths::device_tflops},
    {"gpu_layer_launch_seconds", &Bandwidths::gpu_layer_launch_seconds},
    {"gpu_attention_lone_key_seconds", &Bandwidths::gpu_attention_lone_key_seconds},
    {"gpu_attention_key_seconds", &Bandwidths::gpu_attention_key_seconds},
    {"gpu_attention_wave_blocks", &Bandwidths::gpu_attention_wave_blocks},
    {"gpu_dequant_i8_seconds", &Bandwidths::gpu_dequant_i8_seconds},
    {"gpu_dequant_q4_seconds", &Bandwidths::gpu_dequant_q4_seconds},
    {"gpu_logits_d2h_gbps", &Bandwidths::gpu_logits_d2h_gbps},
};

// Where the CPU's rates are kept by thread count (the latest calibration's also sit at the top
// level, where caches from before kept their only ones).
constexpr const char* kByThreads = "cpu_rates_by_threads";

// The CPU's rates of one calibration, as the cache stores them.
nlohmann::json CpuRatesJson(const CalibrationRecord& record) {
  const Bandwidths& rates = record.rates;
  nlohmann::json json = {{"dram_read_gbps", rates.dram_read_gbps},
                         {"dram_read_spread_gbps", {record.dram_min_gbps, record.dram_max_gbps}},
                         {"compute_gflops", rates.compute_gflops},
                         {"int8_gflops", rates.int8_gflops},
                         {"int4_gflops", rates.int4_gflops},
                         {"cpu_attention_gflops", rates.cpu_attention_gflops},
                         {"threads", rates.cpu_threads}};
  for (const auto& [key, weights, group_size, field] : kTokenRates)
    json["matmul_gflops_by_tokens"][key] = (rates.*field).points;
  return json;
}

// The CPU's rates from `json` (the top level or one thread count's entry) into `rates`.
void ReadCpuRates(const nlohmann::json& json, Bandwidths& rates) {
  rates.dram_read_gbps = json.at("dram_read_gbps");
  rates.compute_gflops = json.at("compute_gflops");
  // Caches from before the integer kernels were measured hold none: the float rate stands in.
  rates.int8_gflops = json.value("int8_gflops", 0.0);
  rates.int4_gflops = json.value("int4_gflops", 0.0);
  rates.cpu_attention_gflops = json.value("cpu_attention_gflops", 0.0);
  // Caches from before the rates were measured by size hold none: the single rates stand in.
  const nlohmann::json by_tokens = json.value("matmul_gflops_by_tokens", nlohmann::json::object());
  for (const auto& [key, weights, group_size, field] : kTokenRates) {
    rates.*field = {};
    if (!by_tokens.contains(key)) continue;
    TokenRates table{by_tokens.at(key).get<std::vector<std::pair<int, double>>>()};
    if (!table.Valid()) {
      spdlog::warn("ignoring the calibration cache's {} product rates in {}: they need sizes "
                   "ascending from 1 token and positive rates; run zinf calibrate",
                   key, CalibrationCachePath());
      continue;
    }
    rates.*field = std::move(table);
  }
  rates.cpu_threads = json.value("threads", 0);
}

// The rates by thread count of the cache's earlier calibrations, when the same DRAM probe
// measured them; whatever else the file holds (nothing, another probe's, a broken file) is
// written over.
nlohmann::json KeptRatesByThreads() {
  std::ifstream file(CalibrationCachePath());
  const nlohmann::json earlier =
      file ? nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false) : nlohmann::json();
  if (!earlier.is_object()) return nlohmann::json::object();
  const auto probe = earlier.find("dram_probe");
  const auto kept = earlier.find(kByThreads);
  if (probe == earlier.end() || *probe != cpu::kDramProbeVersion || kept == earlier.end() ||
      !kept->is_object()) {
    return nlohmann::json::object();
  }
  return *kept;
}

}  // namespace

std::string CalibrationCachePath() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg != nullptr && *xdg != '\0' ? fs::path(xdg)
                        : home != nullptr              ? fs::path(home) / ".cache"
                                                       : fs::temp_directory_path();
  return (base / "zinf" / "calibration.json").string();
}

void StoreCalibration(const CalibrationRecord& record) {
  const Bandwidths& rates = record.rates;
  nlohmann::json by_threads = KeptRatesByThreads();
  const nlohmann::json cpu_rates = CpuRatesJson(record);
  by_threads[std::to_string(rates.cpu_threads)] = cpu_rates;
  nlohmann::json json = cpu_rates;
  json.update({{"disk_read_gbps", rates.disk_read_gbps},
               {"checksum_gbps", rates.checksum_gbps},
               {"dram_probe", cpu::kDramProbeVersion},
               {"host_sample_seconds_per_logit", rates.host_sample_seconds_per_logit},
               {"disk_probe_file", record.disk_probe_file},
               {"direct_io", record.direct_io},
               {kByThreads, by_threads}});
  if (rates.gpu_measured) {
    for (const auto& [key, field] : kGpuRates) json[key] = rates.*field;
  }
  const fs::path cache = CalibrationCachePath();
  fs::create_directories(cache.parent_path());
  std::ofstream(cache) << json.dump(2) << "\n";
}

std::optional<Bandwidths> LoadCalibration(int threads) {
  std::ifstream file(CalibrationCachePath());
  if (!file) return std::nullopt;
  try {
    const nlohmann::json json = nlohmann::json::parse(file);
    if (json.value("dram_probe", 1) != cpu::kDramProbeVersion) {
      spdlog::warn("ignoring the calibration cache {}: its DRAM rate was measured by an older "
                   "probe; run zinf calibrate",
                   CalibrationCachePath());
      return std::nullopt;
    }
    Bandwidths rates;
    rates.disk_read_gbps = json.at("disk_read_gbps");
    rates.checksum_gbps = json.value("checksum_gbps", rates.checksum_gbps);
    const std::string thread_key = std::to_string(threads);
    const bool kept = json.contains(kByThreads) && json.at(kByThreads).contains(thread_key);
    ReadCpuRates(kept ? json.at(kByThreads).at(thread_key) : json, rates);
    // A calibration made without a GPU leaves the GPU's rates at the planner's assumptions, and
    // one from before the kernels' costs were timed leaves those.
    for (const auto& [key, field] : kGpuRates) rates.*field = json.value(key, rates.*field);
    rates.host_sample_seconds_per_logit =
        json.value("host_sample_seconds_per_logit", rates.host_sample_seconds_per_logit);
    rates.gpu_measured = json.contains("h2d_gbps");
    rates.measured = true;
    return rates;
  } catch (const nlohmann::json::exception& error) {
    spdlog::warn("ignoring the calibration cache {}: {}; run zinf calibrate",
                 CalibrationCachePath(), error.what());
    return std::nullopt;
  }
}

}  // namespace zinf::cli
