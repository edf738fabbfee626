// CLI11 validators for zinf's flags; see flag_checks.h.
#include "cmd/flag_checks.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "cmd/byte_size.h"
#include "cmd/shard.h"
#include "engine/error.h"

namespace zinf::cli {

namespace {

// The whole of `text` as a number (strtod: "1e3", "nan" and "inf" included), else nullopt.
std::optional<double> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nullopt;
  return value;
}

// The whole of `text` as a decimal integer, else nullopt.
std::optional<int64_t> ParseInteger(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nullopt;
  return value;
}

}  // namespace

CLI::Validator IntAtLeast(int64_t min, const std::string& note) {
  const std::string range =
      fmt::format("an integer >= {}{}", min, note.empty() ? "" : " (" + note + ")");
  return CLI::Validator(
      [min, range](std::string& text) -> std::string {
        const std::optional<int64_t> value = ParseInteger(text);
        if (value && *value >= min) return "";
        return fmt::format("must be {}, got '{}'", range, text);
      },
      "");  // the message states the range; the help text, what leaving the flag out means
}

CLI::Validator ShardCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text == "none") return "";
        try {
          ParseShard(text);
        } catch (const Error& error) {
          return error.what();
        }
        return "";
      },
      "");
}

CLI::Validator PositiveNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<double> value = ParseNumber(text);
        if (value && *value > 0 && std::isfinite(*value)) return "";
        return fmt::format("must be a finite number > 0, got '{}'", text);
      },
      "");
}

CLI::Validator NonNegativeNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<double> value = ParseNumber(text);
        if (value && *value >= 0 && std::isfinite(*value)) return "";
        return fmt::format("must be a finite number >= 0, got '{}'", text);
      },
      "");
}

CLI::Validator UnsignedInt() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        // strtoull would take "-1" as 2^64 - 1: digits only.
        const bool digits =
            !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        if (digits && (std::strtoull(text.c_str(), nullptr, 10), errno != ERANGE)) return "";
        return fmt::format("must be an integer in [0, 2^64), got '{}'", text);
      },
      "");
}

CLI::Validator SettingCheck(RequestSetting setting) {
  return CLI::Validator(
      [setting](std::string& text) -> std::string {
        const std::optional<double> value = ParseNumber(text);
        if (!value) return fmt::format("'{}' is not a number", text);
        return RequestSettingProblem(setting, *value);
      },
      "");  // the help text states the range
}

CLI::Validator OneOf(const std::vector<std::string>& choices) {
  return CLI::Validator(
      [choices](std::string& text) -> std::string {
        for (const std::string& choice : choices) {
          if (text == choice) return "";
        }
        return fmt::format("'{}' is not one of {}", text, fmt::join(choices, ", "));
      },
      fmt::format("{{{}}}", fmt::join(choices, ",")));
}

CLI::Validator ByteSizeCheck() {
  return CLI::Validator([](std::string& text) -> std::string { return ByteSizeProblem(text); }, "");
}

}  // namespace zinf::cli
