// Calibrate and its JSON cache.
#include "cmd/calibration.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>
#include <vector>

#include "cpu/probe.h"
#include "cuda/cuda_backend.h"
#include "engine/error.h"
#include "engine/sampler.h"
#include "io/disk_probe.h"

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

// The CPU's product rates by weight format as the cache stores them, and the step sizes measured:
// decode batches from one sequence to many, and prompt chunks.
struct TokenRatesField {
  const char* key;
  DType weights;
  TokenRates Bandwidths::*field;
};
constexpr TokenRatesField kTokenRates[] = {
    {"f32", DType::kF32, &Bandwidths::f32_by_tokens},
    {"f16", DType::kF16, &Bandwidths::f16_by_tokens},
    {"int8", DType::kI8, &Bandwidths::int8_by_tokens},
    {"int4", DType::kQ4, &Bandwidths::int4_by_tokens},
};
constexpr int kCalibratedTokens[] = {1, 8, 32, 128, 512};
constexpr int kSingleRateTokens = 32;  // the single rates' size, as calibrate measured before

// Enough to get past the drive's cache and show its sustained rate; small enough to take seconds.
constexpr uint64_t kProbeBytes = 1ull << 30;

// Writes kProbeBytes of non-zero data (some filesystems shortcut zeros) and syncs it to the drive.
std::string WriteProbeFile(const fs::path& directory) {
  fs::create_directories(directory);
  const std::string path = (directory / "disk-probe.bin").string();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Fail("cannot write the disk probe file {}: {}", path, std::strerror(errno));
  std::vector<char> block(1 << 20);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 131 + 7);
  for (uint64_t written = 0; written < kProbeBytes; written += block.size()) {
    if (write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
      close(fd);
      Fail("cannot write the disk probe file {}: {}", path, std::strerror(errno));
    }
  }
  fsync(fd);
  close(fd);
  return path;
}

// The sampler's greedy pick over rows of a 32,000-token vocabulary, per logit: the host's share of
// every GPU step (the best of 5 passes over 256 rows of varied values).
double GreedyPickSecondsPerLogit() {
  constexpr int kRows = 256, kVocab = 32000;
  std::vector<float> logits(static_cast<size_t>(kRows) * kVocab);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 10007);
  Sampler sampler{SamplingParams{}};
  double best = 0;
  int64_t picked = 0;  // used, so the picks are not optimised away
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    for (int row = 0; row < kRows; ++row) {
      picked +=
          sampler.Sample(std::span(logits).subspan(static_cast<size_t>(row) * kVocab, kVocab), {});
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (best == 0 || seconds < best) best = seconds;
  }
  spdlog::debug("greedy picks: {} (checksum)", picked);
  return best / (static_cast<double>(kRows) * kVocab);
}

// GB/s (1e9 bytes per second) of XXH3-64 on one thread over a 256 MiB buffer evicted from the
// caches first, as TieredWeightSource::Acquire verifies a staging buffer a read has just filled
// (DMA writes behind the caches); the best of 3.
double ChecksumGbps() {
  constexpr size_t kBytes = size_t{256} << 20;
  std::vector<uint8_t> buffer(kBytes);
  for (size_t i = 0; i < kBytes; ++i) buffer[i] = static_cast<uint8_t>(i * 131 + 7);
  double best = 1e30;
  for (int pass = 0; pass < 3; ++pass) {
    cpu::EvictFromCaches(buffer.data(), kBytes);
    const auto start = std::chrono::steady_clock::now();
    XXH3_64bits(buffer.data(), kBytes);  // a call into libxxhash: never optimised away
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return kBytes / best / 1e9;
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

Bandwidths Calibrate(const std::string& probe_file, int num_threads) {
  const fs::path cache = CalibrationCachePath();
  std::string file = probe_file;
  const bool temporary = file.empty();
  if (temporary) file = WriteProbeFile(cache.parent_path());
  const io::DiskReadRate disk = io::MeasureDiskRead(file, kProbeBytes);
  if (temporary) fs::remove(file);
  Bandwidths rates;
  rates.disk_read_gbps = disk.gbps;
  rates.checksum_gbps = ChecksumGbps();
  const cpu::DramReadRate dram = cpu::MeasureDramRead(num_threads);
  rates.dram_read_gbps = dram.median_gbps;
  std::string products;
  for (const auto& [key, weights, field] : kTokenRates) {
    const std::vector<double> gflops =
        cpu::MeasureMatmulGflops(num_threads, weights, kCalibratedTokens);
    std::string row;
    for (size_t k = 0; k < gflops.size(); ++k) {
      (rates.*field).points.emplace_back(kCalibratedTokens[k], gflops[k]);
      row += fmt::format("{}{:.0f}", k == 0 ? "" : "/", gflops[k]);
    }
    products += fmt::format("{}{} {}", products.empty() ? "" : ", ", key, row);
  }
  rates.compute_gflops = rates.f32_by_tokens.At(kSingleRateTokens);
  rates.int8_gflops = rates.int8_by_tokens.At(kSingleRateTokens);
  rates.int4_gflops = rates.int4_by_tokens.At(kSingleRateTokens);
  rates.cpu_attention_gflops = cpu::MeasureAttentionGflops(num_threads);
  rates.host_sample_seconds_per_logit = GreedyPickSecondsPerLogit();
  rates.measured = true;
  rates.cpu_threads = num_threads;
  // A GPU's rates too, where there is one: streamed plans are bound by its link.
  const bool gpu = cuda::CudaBuilt() && cuda::CudaUnavailableReason().empty();
  if (gpu) {
    cuda::MeasureDeviceRates(0, rates);
    spdlog::info("calibrated GPU 0: pinned host-to-device {:.1f} GB/s, device memory {:.0f} GB/s, "
                 "bf16 matrix products {:.0f} TFLOP/s; {}",
                 rates.h2d_gbps, rates.device_gbps, rates.device_tflops, GpuKernelCosts(rates));
  }
  spdlog::info(
      "calibrated: disk {:.2f} GB/s ({}{}), checksums {:.1f} GB/s, DRAM {:.1f} GB/s (median of "
      "{} passes, {:.1f}-{:.1f}), products GFLOP/s by weights at {} tokens: {}; attention "
      "{:.1f} GFLOP/s ({} threads), greedy picks {:.2f} ns per logit -> {}",
      rates.disk_read_gbps, file, disk.direct_io ? ", O_DIRECT" : ", buffered: may be cached",
      rates.checksum_gbps, rates.dram_read_gbps, dram.passes, dram.min_gbps, dram.max_gbps,
      fmt::join(kCalibratedTokens, "/"), products, rates.cpu_attention_gflops, num_threads,
      rates.host_sample_seconds_per_logit * 1e9, cache.string());
  nlohmann::json json = {{"disk_read_gbps", rates.disk_read_gbps},
                         {"checksum_gbps", rates.checksum_gbps},
                         {"dram_read_gbps", rates.dram_read_gbps},
                         {"dram_read_spread_gbps", {dram.min_gbps, dram.max_gbps}},
                         {"dram_probe", cpu::kDramProbeVersion},
                         {"compute_gflops", rates.compute_gflops},
                         {"int8_gflops", rates.int8_gflops},
                         {"int4_gflops", rates.int4_gflops},
                         {"cpu_attention_gflops", rates.cpu_attention_gflops},
                         {"host_sample_seconds_per_logit", rates.host_sample_seconds_per_logit},
                         {"threads", num_threads},
                         {"disk_probe_file", file},
                         {"direct_io", disk.direct_io}};
  for (const auto& [key, weights, field] : kTokenRates)
    json["matmul_gflops_by_tokens"][key] = (rates.*field).points;
  if (gpu) {
    for (const auto& [key, field] : kGpuRates) json[key] = rates.*field;
  }
  fs::create_directories(cache.parent_path());
  std::ofstream(cache) << json.dump(2) << "\n";
  return rates;
}

std::optional<Bandwidths> LoadCalibration() {
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
    rates.dram_read_gbps = json.at("dram_read_gbps");
    rates.compute_gflops = json.at("compute_gflops");
    // Caches from before the integer kernels were measured hold none: the float rate stands in.
    rates.int8_gflops = json.value("int8_gflops", 0.0);
    rates.int4_gflops = json.value("int4_gflops", 0.0);
    rates.cpu_attention_gflops = json.value("cpu_attention_gflops", 0.0);
    // Caches from before the rates were measured by size hold none: the single rates stand in.
    const nlohmann::json by_tokens =
        json.value("matmul_gflops_by_tokens", nlohmann::json::object());
    for (const auto& [key, weights, field] : kTokenRates) {
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
    // A calibration made without a GPU leaves the GPU's rates at the planner's assumptions, and
    // one from before the kernels' costs were timed leaves those.
    for (const auto& [key, field] : kGpuRates) rates.*field = json.value(key, rates.*field);
    rates.host_sample_seconds_per_logit =
        json.value("host_sample_seconds_per_logit", rates.host_sample_seconds_per_logit);
    rates.gpu_measured = json.contains("h2d_gbps");
    rates.cpu_threads = json.value("threads", 0);
    rates.measured = true;
    return rates;
  } catch (const nlohmann::json::exception& error) {
    spdlog::warn("ignoring the calibration cache {}: {}; run zinf calibrate",
                 CalibrationCachePath(), error.what());
    return std::nullopt;
  }
}

}  // namespace zinf::cli
