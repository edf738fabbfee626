// Python's str() and repr() of template values: what `{{ x }}` prints and how lists and dicts
// show their items (['a', 1, None], {'k': 1.0}, floats as Python's shortest round-trip repr).
#pragma once

#include <string>
#include <string_view>

#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

std::string Str(const Value& value);   // str(x); Undefined prints as ""
std::string Repr(const Value& value);  // repr(x)
std::string StringRepr(std::string_view text);
std::string FloatRepr(double value);  // repr(float): 1.0, 0.1, 1e+20, inf, nan

}  // namespace zinf::formats::jinja
