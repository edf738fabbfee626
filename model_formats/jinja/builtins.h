// The filters, tests and global functions templates can name, looked up by name.
#pragma once

#include <string_view>

#include "model_formats/jinja/ast.h"

namespace zinf::formats::jinja {

FilterFn FindFilter(std::string_view name);  // null when unknown
TestFn FindTest(std::string_view name);      // null when unknown

// Binds a builtin's arguments by position or keyword to its parameter names, Python-style.
class ArgBinder {
 public:
  // `names`: the parameters after the target, in order.
  ArgBinder(const char* function, CallArgs& args, std::initializer_list<const char*> names);
  const Value* Get(size_t index) const;  // null when not given
  Value GetOr(size_t index, Value fallback) const;

 private:
  std::vector<const Value*> bound_;
};

}  // namespace zinf::formats::jinja
