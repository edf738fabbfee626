// nlohmann's exception text without its "[json.exception.parse_error.101] " prefix: users need
// only the rest. Header-only so the self-contained prompt and output file readers can share it.
#pragma once

#include <exception>
#include <string>

namespace zinf::cli {

inline std::string JsonMessage(const std::exception& error) {
  std::string message = error.what();
  if (message.rfind("[json.exception.", 0) == 0) {
    const size_t end = message.find("] ");
    if (end != std::string::npos) message.erase(0, end + 2);
  }
  return message;
}

}  // namespace zinf::cli
