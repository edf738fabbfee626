// Calibrate: the measurements behind the planner's rates on this machine.
#include "cmd/calibration.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <vector>

#include "cpu/probe.h"
#include "cuda/cuda_backend.h"
#include "engine/error.h"
#include "engine/sampler.h"
#include "engine/xxh3.h"
#include "io/disk_probe.h"

namespace zinf::cli {

namespace fs = std::filesystem;

namespace {

// The step sizes measured: decode batches from one sequence to many, and prompt chunks.
constexpr int kCalibratedTokens[] = {1, 8, 32, 128, 512};
constexpr int kSingleRateTokens = 32;  // the single rates' size, as calibrate measured before

// Enough to get past the drive's cache and show its sustained rate; small enough to take seconds.
constexpr uint64_t kProbeBytes = 1ull << 30;
// What --small-probes divides every probe's size by.
constexpr int kSmallProbeDivisor = 16;
constexpr size_t kChecksumProbeBytes = size_t{256} << 20;
constexpr int kSampledRows = 256;

// Writes `bytes` of non-zero data (some filesystems shortcut zeros) and syncs it to the drive.
std::string WriteProbeFile(const fs::path& directory, uint64_t bytes) {
  fs::create_directories(directory);
  const std::string path = (directory / "disk-probe.bin").string();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Fail("cannot write the disk probe file {}: {}", path, std::strerror(errno));
  std::vector<char> block(1 << 20);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 131 + 7);
  for (uint64_t written = 0; written < bytes; written += block.size()) {
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
// every GPU step (the best of 5 passes over `rows` rows of varied values).
double GreedyPickSecondsPerLogit(int rows) {
  constexpr int kVocab = 32000;
  std::vector<float> logits(static_cast<size_t>(rows) * kVocab);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 10007);
  Sampler sampler{SamplingParams{}};
  double best = 0;
  int64_t picked = 0;  // used, so the picks are not optimised away
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    for (int row = 0; row < rows; ++row) {
      picked +=
          sampler.Sample(std::span(logits).subspan(static_cast<size_t>(row) * kVocab, kVocab), {});
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (best == 0 || seconds < best) best = seconds;
  }
  spdlog::debug("greedy picks: {} (checksum)", picked);
  return best / (static_cast<double>(rows) * kVocab);
}

// GB/s (1e9 bytes per second) of XXH3-64 on one thread over a buffer of `bytes` (256 MiB) evicted
// from the caches first, as TieredWeightSource::Acquire verifies a staging buffer a read has just
// filled (DMA writes behind the caches); the best of 3.
double ChecksumGbps(size_t bytes) {
  std::vector<uint8_t> buffer(bytes);
  for (size_t i = 0; i < bytes; ++i) buffer[i] = static_cast<uint8_t>(i * 131 + 7);
  double best = 1e30;
  for (int pass = 0; pass < 3; ++pass) {
    cpu::EvictFromCaches(buffer.data(), bytes);
    const auto start = std::chrono::steady_clock::now();
    XXH3_64bits(buffer.data(), bytes);  // a call into libxxhash: never optimised away
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return bytes / best / 1e9;
}

}  // namespace

Bandwidths Calibrate(const std::string& probe_file, int num_threads, bool small_probes) {
  const int divisor = small_probes ? kSmallProbeDivisor : 1;
  if (small_probes) {
    spdlog::warn("--small-probes: every probe a sixteenth of its size, so the rates come from the "
                 "caches; calibrate without it before planning real runs");
  }
  const fs::path cache = CalibrationCachePath();
  std::string file = probe_file;
  const bool temporary = file.empty();
  const uint64_t file_bytes = kProbeBytes / divisor;
  if (temporary) file = WriteProbeFile(cache.parent_path(), file_bytes);
  const io::DiskReadRate disk = io::MeasureDiskRead(file, file_bytes);
  if (temporary) fs::remove(file);
  Bandwidths rates;
  rates.disk_read_gbps = disk.gbps;
  rates.checksum_gbps = ChecksumGbps(kChecksumProbeBytes / divisor);
  const cpu::DramReadRate dram = MeasureDramRate(num_threads, small_probes);
  rates.dram_read_gbps = dram.median_gbps;
  std::string products;
  for (const auto& [key, weights, group_size, field] : kTokenRates) {
    const std::vector<double> gflops = cpu::MeasureMatmulGflops(
        num_threads, weights, kCalibratedTokens, group_size, cpu::kMatmulProbeDim / divisor);
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
  rates.cpu_attention_gflops =
      cpu::MeasureAttentionGflops(num_threads, cpu::kAttentionProbeContext / divisor);
  rates.host_sample_seconds_per_logit = GreedyPickSecondsPerLogit(kSampledRows / divisor);
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
  rates.gpu_measured = gpu;
  StoreCalibration({rates, dram.min_gbps, dram.max_gbps, file, disk.direct_io});
  return rates;
}

cpu::DramReadRate MeasureDramRate(int num_threads, bool small_probes) {
  return cpu::MeasureDramRead(num_threads, cpu::kDramProbePasses,
                              cpu::kDramProbeBytes / (small_probes ? kSmallProbeDivisor : 1));
}

}  // namespace zinf::cli
