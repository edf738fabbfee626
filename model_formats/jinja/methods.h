// Python methods on template values: str (startswith, split, strip, ...), dict (get, items,
// keys, values) and list (index, count). Methods that mutate are refused, as jinja2's
// ImmutableSandboxedEnvironment refuses them.
#pragma once

#include <string>
#include <string_view>

#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

enum class MethodKind { kNone, kSafe, kMutating };
// Whether `object` (a str, dict or list) has a method `name`, and whether the sandbox allows it.
MethodKind FindMethod(const Value& object, std::string_view name);

// `object.name` bound, called later with its arguments.
struct BoundMethod : Function {
  BoundMethod(Value self_value, std::string method_name)
      : Function(std::move(method_name)), self(std::move(self_value)) {}
  Value Call(Interpreter& interpreter, CallArgs& args) override;
  Value self;
};

}  // namespace zinf::formats::jinja
