// The tables behind FindFilter and FindTest, one per file that defines them.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "model_formats/jinja/ast.h"

namespace zinf::formats::jinja {

using FilterTable = std::vector<std::pair<std::string_view, FilterFn>>;
using TestTable = std::vector<std::pair<std::string_view, TestFn>>;

const FilterTable& StringFilters();    // filters.cpp
const FilterTable& SequenceFilters();  // filters_seq.cpp
const TestTable& Tests();              // tests.cpp

// Helpers the filter files share (filters.cpp).
std::string SoftStr(const Value& value);  // str(), with Undefined as ""
// jinja2's make_attrgetter: "a.b.0" looked up item by item on `item`.
Value GetAttribute(Interpreter& interpreter, const Value& item, const Value& attribute);

}  // namespace zinf::formats::jinja
