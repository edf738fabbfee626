// GenerateProgress (cmd/generate_progress.h).
#include "cmd/generate_progress.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/byte_units.h"

namespace zinf::cli {

namespace {

constexpr double kRedrawSeconds = 0.25;  // a terminal line a person can read as it changes
constexpr double kRateWindowSeconds = 30;

// "512", "2.05k", "1.20M": a rate at a glance.
std::string Compact(double value) {
  if (value >= 1e6) return fmt::format("{:.2f}M", value / 1e6);
  if (value >= 1e4) return fmt::format("{:.1f}k", value / 1e3);
  if (value >= 100) return fmt::format("{:.0f}", value);
  return FormatRate(value);
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (seconds < 9.95) return fmt::format("{:.1f}s", std::max(seconds, 0.0));
  const int64_t s = std::llround(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

std::string FormatProgress(const ProgressSnapshot& p) {
  std::string line = fmt::format("{}/{} requests", p.done, p.total);
  if (p.failed > 0) line += fmt::format(" ({} failed)", p.failed);
  line += fmt::format(" | gen {} tok/s, prefill {} tok/s | {} elapsed",
                      Compact(p.generation_tokens_per_s), Compact(p.prefill_tokens_per_s),
                      FormatDuration(p.elapsed_seconds));
  // The ETA divides the tokens left by the recent token rate where they are known: a run that
  // starts all its requests at once finishes none until late, so its request rate says nothing.
  // Otherwise it extrapolates the run's request rate, unknown until a request has finished.
  const double token_rate = p.generation_tokens_per_s + p.prefill_tokens_per_s;
  if (p.done >= p.total) {
    line += ", done";
  } else if (p.remaining_tokens >= 0 && token_rate > 0) {
    line += ", ETA " + FormatDuration(p.remaining_tokens / token_rate);
  } else if (p.done > 0 && p.elapsed_seconds > 0) {
    const double seconds_per_request = p.elapsed_seconds / p.done;
    line += ", ETA " + FormatDuration(seconds_per_request * (p.total - p.done));
  } else {
    line += ", ETA --";
  }
  return line;
}

GenerateProgress::GenerateProgress(int64_t total_requests, double log_every_seconds)
    : tty_(isatty(STDERR_FILENO) == 1), log_every_seconds_(log_every_seconds) {
  latest_.total = total_requests;
}

GenerateProgress::~GenerateProgress() { Finish(); }

ProgressSnapshot GenerateProgress::Snapshot(double now) {
  ProgressSnapshot snapshot = latest_;
  snapshot.elapsed_seconds = now;
  const Sample& oldest = window_.front();
  const double span = now - oldest.seconds;
  if (span > 0) {
    snapshot.generation_tokens_per_s = (latest_.generated_tokens - oldest.generated_tokens) / span;
    snapshot.prefill_tokens_per_s = (latest_.prompt_tokens - oldest.prompt_tokens) / span;
  }
  return snapshot;
}

void GenerateProgress::Update(int64_t done, int64_t failed, int64_t prompt_tokens,
                              int64_t generated_tokens, double remaining_tokens) {
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  latest_.done = done;
  latest_.failed = failed;
  latest_.prompt_tokens = prompt_tokens;
  latest_.generated_tokens = generated_tokens;
  latest_.remaining_tokens = remaining_tokens;
  if (window_.empty()) window_.push_back({0, 0, 0});
  window_.push_back({now, prompt_tokens, generated_tokens});
  while (window_.size() > 2 && now - window_[1].seconds >= kRateWindowSeconds) {
    window_.pop_front();
  }

  const double period = tty_ ? kRedrawSeconds : log_every_seconds_;
  if (period <= 0 || now - last_output_seconds_ < period) return;
  last_output_seconds_ = now;
  const std::string line = FormatProgress(Snapshot(now));
  if (tty_) {
    constexpr int kWidth = 20;
    const double fraction =
        latest_.total > 0 ? std::min(1.0, static_cast<double>(done) / latest_.total) : 1.0;
    const int filled = static_cast<int>(fraction * kWidth);
    fmt::print(stderr, "\r[{}{}] {:3.0f}% {}\x1b[K", std::string(filled, '#'),
               std::string(kWidth - filled, '.'), 100 * fraction, line);
    std::fflush(stderr);
    drawn_ = true;
  } else {
    spdlog::info("progress: {}", line);
  }
}

void GenerateProgress::Finish() {
  if (!drawn_) return;
  drawn_ = false;
  fmt::print(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace zinf::cli
