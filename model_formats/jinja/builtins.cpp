// Argument binding for builtins and the filter and test lookup tables.
#include "model_formats/jinja/builtins.h"

#include "model_formats/jinja/builtins_table.h"
#include "model_formats/jinja/error.h"

namespace zinf::formats::jinja {

ArgBinder::ArgBinder(const char* function, CallArgs& args, std::initializer_list<const char*> names)
    : bound_(names.size(), nullptr) {
  if (args.positional.size() > names.size()) {
    Throw("{}() takes at most {} argument(s) ({} given)", function, names.size(),
          args.positional.size());
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    for (const char* name : names) {
      if (key == name) break;
      ++i;
    }
    if (i == names.size()) Throw("{}() got an unexpected keyword argument '{}'", function, key);
    if (bound_[i]) Throw("{}() got multiple values for argument '{}'", function, key);
    bound_[i] = &value;
  }
}

const Value* ArgBinder::Get(size_t index) const {
  return index < bound_.size() ? bound_[index] : nullptr;
}

Value ArgBinder::GetOr(size_t index, Value fallback) const {
  const Value* value = Get(index);
  return value ? *value : fallback;
}

FilterFn FindFilter(std::string_view name) {
  for (const auto* table : {&StringFilters(), &SequenceFilters()}) {
    for (const auto& [filter_name, fn] : *table) {
      if (name == filter_name) return fn;
    }
  }
  return nullptr;
}

TestFn FindTest(std::string_view name) {
  for (const auto& [test_name, fn] : Tests()) {
    if (name == test_name) return fn;
  }
  return nullptr;
}

}  // namespace zinf::formats::jinja
