// The global functions templates call: range, namespace, dict, cycler, joiner, and
// transformers' raise_exception and strftime_now.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

std::vector<std::pair<std::string, Value>> MakeGlobals();

}  // namespace zinf::formats::jinja
