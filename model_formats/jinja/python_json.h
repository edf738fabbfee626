// JSON in and out of template values: input JSON becomes values (keeping key order), and
// `tojson` prints values exactly as Python's json.dumps(ensure_ascii=False, ...) does.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps' indent as a string (an int n: n spaces)
  // json.dumps' separators; unset: ", " (or "," with an indent) and ": ".
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Fails with Python's TypeError message for values JSON cannot hold (Undefined, namespace, ...).
std::string DumpJson(const Value& value, const JsonDumpOptions& options);

// Fails when the JSON nests deeper than kMaxValueDepth.
Value FromJson(const nlohmann::ordered_json& json);

}  // namespace zinf::formats::jinja
