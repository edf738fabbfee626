// Attribute and item access as jinja2's sandboxed environment does it: `a.b` tries the Python
// attribute (a method) and then the item; `a[b]` the item and then the attribute. What is
// missing is Undefined, carrying jinja2's message for when it is used.
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/methods.h"
#include "model_formats/jinja/python_str.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

// jinja2's object_type_repr.
std::string ObjectTypeRepr(const Value& object) {
  switch (object.kind()) {
    case Kind::kNone: return "None";
    case Kind::kNamespace: return "jinja2.utils.Namespace object";
    case Kind::kLoop: return "jinja2.runtime.LoopContext object";
    case Kind::kFunction: return "function object";
    default: return std::string(object.TypeName()) + " object";
  }
}

Value MissingAttribute(const Value& object, std::string_view name) {
  return Value::Undefined(fmt::format("'{}' has no attribute '{}'", ObjectTypeRepr(object), name));
}

Value MissingElement(const Value& object, const Value& key) {
  return Value::Undefined(fmt::format("{} has no element {}", ObjectTypeRepr(object), Repr(key)));
}

// A cycle helper: loop.cycle(a, b, ...) picks by the loop index.
struct LoopCycle : Function {
  explicit LoopCycle(std::shared_ptr<LoopState> state)
      : Function("cycle"), loop(std::move(state)) {}
  Value Call(Interpreter&, CallArgs& args) override {
    if (args.positional.empty()) Throw("no items for cycling given");
    return args.positional[static_cast<size_t>(loop->index0) % args.positional.size()];
  }
  std::shared_ptr<LoopState> loop;
};

// loop.changed(*values): true when the values differ from the previous call's.
struct LoopChanged : Function {
  explicit LoopChanged(std::shared_ptr<LoopState> state)
      : Function("changed"), loop(std::move(state)) {}
  Value Call(Interpreter&, CallArgs& args) override {
    const Value current = Value::MakeList(args.positional, true);
    if (loop->has_last_changed && Equal(Value::MakeList(loop->last_changed, true), current)) {
      return Value(false);
    }
    loop->last_changed = args.positional;
    loop->has_last_changed = true;
    return Value(true);
  }
  std::shared_ptr<LoopState> loop;
};

Value LoopAttribute(const Value& object, std::string_view name) {
  const LoopState& loop = object.AsLoop();
  const int64_t length = static_cast<int64_t>(loop.items->items.size());
  const int64_t i = loop.index0;
  if (name == "index") return Value(i + 1);
  if (name == "index0") return Value(i);
  if (name == "revindex") return Value(length - i);
  if (name == "revindex0") return Value(length - i - 1);
  if (name == "first") return Value(i == 0);
  if (name == "last") return Value(i == length - 1);
  if (name == "length") return Value(length);
  if (name == "depth") return Value(int64_t{1});
  if (name == "depth0") return Value(int64_t{0});
  if (name == "previtem") {
    if (i == 0) return Value::Undefined("there is no previous item");
    return loop.items->items[static_cast<size_t>(i - 1)];
  }
  if (name == "nextitem") {
    if (i + 1 >= length) return Value::Undefined("there is no next item");
    return loop.items->items[static_cast<size_t>(i + 1)];
  }
  if (name == "cycle") {
    return Value(std::shared_ptr<Function>(
        std::make_shared<LoopCycle>(std::static_pointer_cast<LoopState>(object.object()))));
  }
  if (name == "changed") {
    return Value(std::shared_ptr<Function>(
        std::make_shared<LoopChanged>(std::static_pointer_cast<LoopState>(object.object()))));
  }
  return MissingAttribute(object, name);
}

}  // namespace

Value Interpreter::GetAttr(const Value& object, std::string_view name) {
  if (object.IsUndefined()) FailUndefined(object);
  // The sandbox hides every underscore attribute (__class__, __init__, ...).
  if (!name.empty() && name[0] == '_') {
    return Value::Undefined(
        fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, object.TypeName()));
  }
  switch (object.kind()) {
    case Kind::kUndefined: FailUndefined(object);
    case Kind::kLoop: return LoopAttribute(object, name);
    case Kind::kNamespace: {
      const Value* value = object.AsDict().Find(name);
      return value ? *value : MissingAttribute(object, name);
    }
    case Kind::kString:
    case Kind::kList:
    case Kind::kDict: {
      const MethodKind method = FindMethod(object, name);
      if (method == MethodKind::kSafe) {
        return Value(
            std::shared_ptr<Function>(std::make_shared<BoundMethod>(object, std::string(name))));
      }
      if (method == MethodKind::kMutating) {
        return Value::Undefined(fmt::format("access to attribute '{}' of '{}' object is unsafe.",
                                            name, object.TypeName()));
      }
      if (object.IsDict()) {
        const Value* value = object.AsDict().Find(name);
        if (value) return *value;
      }
      return MissingAttribute(object, name);
    }
    default: return MissingAttribute(object, name);
  }
}

Value Interpreter::GetItem(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Kind::kUndefined: FailUndefined(object);
    case Kind::kDict:
      if (key.IsString()) {
        const Value* value = object.AsDict().Find(key.AsString());
        if (value) return *value;
        return GetAttr(object, key.AsString());
      }
      if (const Value* value = object.AsDict().Find(DictKey(key))) return *value;
      return MissingElement(object, key);
    case Kind::kList:
    case Kind::kString:
      if (key.IsInt() || key.IsBool()) {
        int64_t i = key.AsInt();
        if (object.IsList()) {
          const auto& items = object.AsList().items;
          const int64_t n = static_cast<int64_t>(items.size());
          if (i < 0) i += n;
          if (i < 0 || i >= n) return MissingElement(object, key);
          return items[static_cast<size_t>(i)];
        }
        const std::vector<char32_t> cps = Decode(object.AsString());
        const int64_t n = static_cast<int64_t>(cps.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return MissingElement(object, key);
        std::string out;
        AppendUtf8(out, cps[static_cast<size_t>(i)]);
        return Value(std::move(out));
      }
      if (key.IsString()) return GetAttr(object, key.AsString());
      return MissingElement(object, key);
    default:
      if (key.IsString()) return GetAttr(object, key.AsString());
      return MissingElement(object, key);
  }
}

}  // namespace zinf::formats::jinja
