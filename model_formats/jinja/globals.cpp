// Global functions: jinja2's range (bounded as the sandbox bounds it), namespace, dict, joiner,
// and transformers' raise_exception and strftime_now.
#include "model_formats/jinja/globals.h"

#include <ctime>

#include "model_formats/jinja/builtins.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/python_str.h"

namespace zinf::formats::jinja {
namespace {

// jinja2.sandbox.MAX_RANGE.
constexpr int64_t kMaxRange = 100000;

using BuiltinFn = Value (*)(Interpreter&, CallArgs&);

struct Builtin : Function {
  Builtin(const char* function_name, BuiltinFn function_body)
      : Function(function_name), body(function_body) {}
  Value Call(Interpreter& interpreter, CallArgs& args) override { return body(interpreter, args); }
  BuiltinFn body;
};

Value Range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) Throw("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) Throw("range expected at most 3 arguments, got {}", p.size());
  for (const Value& v : p) {
    if (!v.IsInt() && !v.IsBool())
      Throw("'{}' object cannot be interpreted as an integer", v.TypeName());
  }
  const int64_t start = p.size() == 1 ? 0 : p[0].AsInt();
  const int64_t stop = p.size() == 1 ? p[0].AsInt() : p[1].AsInt();
  const int64_t step = p.size() == 3 ? p[2].AsInt() : 1;
  if (step == 0) Throw("range() arg 3 must not be zero");
  const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                 : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (count > kMaxRange) {
    Throw("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", kMaxRange);
  }
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) items.emplace_back(start + i * step);
  return Value::MakeList(std::move(items));
}

// namespace(...) and dict(...): a mapping from an optional mapping plus keyword arguments.
std::shared_ptr<Dict> MakeDict(CallArgs& args, const char* function) {
  auto dict = std::make_shared<Dict>();
  if (args.positional.size() > 1)
    Throw("{} expected at most 1 argument, got {}", function, args.positional.size());
  std::vector<Value> children;
  if (args.positional.size() == 1) {
    const Value& init = args.positional[0];
    if (init.IsDict()) {
      for (const auto& entry : init.AsDict().entries) dict->Set(entry.first, entry.second);
    } else {
      for (const Value& pair : Iterate(init)) {
        if (!pair.IsList() || pair.AsList().items.size() != 2 ||
            !pair.AsList().items[0].IsString()) {
          Throw("{}: expected (str, value) pairs", function);
        }
        dict->Set(pair.AsList().items[0].AsString(), pair.AsList().items[1]);
      }
    }
  }
  for (auto& [key, value] : args.keyword) dict->Set(key, value);
  for (const auto& entry : dict->entries) children.push_back(entry.second);
  dict->depth = DepthOver(children);
  return dict;
}

Value Namespace(Interpreter& interpreter, CallArgs& args) {
  auto dict = MakeDict(args, "namespace");
  interpreter.Track(dict);
  return Value(std::move(dict), true);
}

Value DictFunction(Interpreter&, CallArgs& args) { return Value(MakeDict(args, "dict")); }

Value RaiseException(Interpreter&, CallArgs& args) {
  ArgBinder binder("raise_exception", args, {"message"});
  throw TemplateError(Str(binder.GetOr(0, Value(""))));
}

Value StrftimeNow(Interpreter& interpreter, CallArgs& args) {
  ArgBinder binder("strftime_now", args, {"format"});
  const Value format = binder.GetOr(0, Value());
  if (!format.IsString()) Throw("strftime() argument 1 must be str, not {}", format.TypeName());
  const std::time_t now = interpreter.now().value_or(std::time(nullptr));
  std::tm local{};
  localtime_r(&now, &local);
  if (format.AsString().empty()) return Value("");
  std::string buf(format.AsString().size() * 8 + 256, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), format.AsString().c_str(), &local);
  buf.resize(n);
  return Value(std::move(buf));
}

// joiner(sep): "" on the first call, sep on every later one.
struct Joiner : Function {
  explicit Joiner(std::string separator) : Function("joiner"), sep(std::move(separator)) {}
  Value Call(Interpreter&, CallArgs&) override {
    if (!used) {
      used = true;
      return Value("");
    }
    return Value(sep);
  }
  std::string sep;
  bool used = false;
};

Value MakeJoiner(Interpreter&, CallArgs& args) {
  ArgBinder binder("joiner", args, {"sep"});
  return Value(
      std::shared_ptr<Function>(std::make_shared<Joiner>(Str(binder.GetOr(0, Value(", "))))));
}

}  // namespace

std::vector<std::pair<std::string, Value>> MakeGlobals() {
  std::vector<std::pair<std::string, Value>> globals;
  auto add = [&](const char* name, BuiltinFn body) {
    globals.emplace_back(name,
                         Value(std::shared_ptr<Function>(std::make_shared<Builtin>(name, body))));
  };
  add("range", Range);
  add("namespace", Namespace);
  add("dict", DictFunction);
  add("joiner", MakeJoiner);
  add("raise_exception", RaiseException);
  add("strftime_now", StrftimeNow);
  return globals;
}

}  // namespace zinf::formats::jinja
