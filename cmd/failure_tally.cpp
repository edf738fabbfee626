// FailureTally (cmd/failure_tally.h).
#include "cmd/failure_tally.h"

#include <spdlog/spdlog.h>

#include <cctype>

namespace zinf::cli {

namespace {

// "prompt of 600 tokens is longer than 512" and "... 700 ... 512" are one kind of failure.
std::string KindOf(std::string_view message) {
  std::string kind;
  for (const char c : message) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (kind.empty() || kind.back() != '#') kind += '#';
    } else {
      kind += c;
    }
  }
  return kind;
}

}  // namespace

void FailureTally::Add(std::string_view id, int64_t line, std::string_view message) {
  ++total_;
  Kind& kind = kinds_[KindOf(message)];
  if (kind.count++ == 0) {
    kind.first_message = message;
    spdlog::warn("request {} (line {}) failed: {} (further failures like it are counted)", id, line,
                 message);
  }
}

void FailureTally::LogRepeats(const std::string& where) const {
  for (const auto& [key, kind] : kinds_) {
    if (kind.count > 1) {
      spdlog::warn("{} requests failed like this: {} (their error lines are in {})", kind.count,
                   kind.first_message, where);
    }
  }
}

}  // namespace zinf::cli
