// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace zinf::cli {

// Not thread-safe. Redraws at most ~10 times a second; Finish() ends the line.
class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total);
  ~ProgressBar();
  void SetTotal(uint64_t total) { total_ = total; }
  void Update(uint64_t done, const std::string& detail = "");
  void Finish();

 private:
  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace zinf::cli
