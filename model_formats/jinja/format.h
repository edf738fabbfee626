// Python string formatting: `"%s" % args` (the `format` filter) and str.format("{}").
#pragma once

#include <string>

#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

// printf-style formatting; `args` is one value or a tuple of them, or a dict for %(name)s.
std::string PercentFormat(const std::string& format, const Value& args);
// str.format: {} {0} {name} with an optional conversion (!r/!s) and format spec.
std::string BraceFormat(const std::string& format, const CallArgs& args);

}  // namespace zinf::formats::jinja
