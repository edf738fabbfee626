// A compiled Jinja template: parsed once, rendered any number of times, concurrently if need be
// (Render is const and keeps its state in a per-call Interpreter).
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model_formats/jinja/ast.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

class Template {
 public:
  // Failure: zinf::Error "NAME:LINE:COL: <jinja2's message>" for a syntax error, unknown tag,
  // filter or test, or an unsupported construct.
  Template(std::string_view source, std::string name);

  // Failure: zinf::Error "NAME:LINE:COL: <message>" for an error raised while rendering.
  std::string Render(std::vector<std::pair<std::string, Value>> variables,
                     const RenderLimits& limits, std::optional<std::time_t> now) const;

 private:
  std::string name_;
  Body body_;
};

}  // namespace zinf::formats::jinja
