// zinf's error type and the always-on invariant check used by every module.
// Errors cross module boundaries as zinf::Error; the CLI catches them once, in cmd/.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace zinf {

// An error a user can act on: the message names what failed, where, and when possible what to do.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Rethrows `error` with `context` in front, so each stage on the way up adds where it was.
[[noreturn]] inline void Rethrow(const std::exception& error, const std::string& context) {
  throw Error(context + ": " + error.what());
}

}  // namespace zinf

// Invariant check that stays on in release builds; a failure is a bug in zinf, reported with file:line.
#define ZINF_CHECK(cond, ...)                                                                    \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      throw ::zinf::Error(::fmt::format("internal error at {}:{}: check '{}' failed: {}",        \
                                        __FILE__, __LINE__, #cond, ::fmt::format(__VA_ARGS__))); \
    }                                                                                            \
  } while (0)
