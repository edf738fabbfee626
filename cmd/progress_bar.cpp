// ProgressBar: "\r"-redrawn bar with percentage and a caller-supplied detail.
#include "cmd/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace zinf::cli {

ProgressBar::ProgressBar(std::string label, uint64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t done, const std::string& detail) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const double fraction = total_ == 0 ? 1.0 : static_cast<double>(done) / total_;
  const int filled = static_cast<int>(fraction * kWidth);
  fmt::print(stderr, "\r{} [{}{}] {:3.0f}% {}\x1b[K", label_, std::string(filled, '#'),
             std::string(kWidth - filled, ' '), fraction * 100, detail);
  std::fflush(stderr);
}

void ProgressBar::Finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  fmt::print(stderr, "\n");
}

}  // namespace zinf::cli
