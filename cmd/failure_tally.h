// Per-request failures of a run, logged once per kind: a million prompts that fail the same way
// give one warning and a count, not a million warnings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace zinf::cli {

// Not thread-safe (generate's callbacks run on one thread).
class FailureTally {
 public:
  // Logs the first failure of each kind (its message with the numbers in it masked) in full;
  // counts the rest.
  void Add(std::string_view id, int64_t line, std::string_view message);
  int64_t total() const { return total_; }
  // At the end of a run: one warning per kind that repeated, with its count.
  void LogRepeats(const std::string& where) const;

 private:
  struct Kind {
    std::string first_message;
    int64_t count = 0;
  };
  std::map<std::string, Kind> kinds_;
  int64_t total_ = 0;
};

}  // namespace zinf::cli
