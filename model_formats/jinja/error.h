// The error a template raises while compiling or rendering: jinja2's message, plus the place in
// the template once a node on the way up has claimed it. Template turns it into zinf::Error.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <string>
#include <utility>

namespace zinf::formats::jinja {

class TemplateError : public std::exception {
 public:
  explicit TemplateError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const { return message_; }
  bool located() const { return line_ > 0; }
  int line() const { return line_; }
  int col() const { return col_; }
  void Locate(int line, int col) {
    if (!located()) {
      line_ = line;
      col_ = col;
    }
  }

 private:
  std::string message_;
  int line_ = 0;
  int col_ = 0;
};

template <typename... Args>
[[noreturn]] void Throw(fmt::format_string<Args...> format, Args&&... args) {
  throw TemplateError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace zinf::formats::jinja
