// Value construction, truthiness, equality and ordering with Python's rules.
#include "model_formats/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "model_formats/jinja/error.h"

namespace zinf::formats::jinja {

const Value* Dict::Find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::Set(std::string key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

std::string DictKey(const Value& key) {
  switch (key.kind()) {
    case Kind::kString: return key.AsString();
    case Kind::kInt: return "\xFFi" + std::to_string(key.AsInt());
    case Kind::kBool:
      return key.AsBool() ? "\xFF"
                            "bTrue"
                          : "\xFF"
                            "bFalse";
    case Kind::kNone: return "\xFFnNone";
    case Kind::kFloat: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", key.AsDouble());
      return std::string("\xFF") + "f" + buf;
    }
    default: Throw("unhashable type: '{}'", key.TypeName());
  }
}

Value KeyValue(const std::string& key) {
  if (key.empty() || key[0] != '\xFF') return Value(key);
  const std::string text = key.substr(2);
  switch (key[1]) {
    case 'i': return Value(static_cast<int64_t>(std::stoll(text)));
    case 'b': return Value(text == "True");
    case 'f': return Value(std::strtod(text.c_str(), nullptr));
    default: return Value::None();
  }
}

namespace {
thread_local int nesting = 0;
}  // namespace

NestingGuard::NestingGuard() {
  if (++nesting > kMaxValueDepth) {
    --nesting;
    Throw("value nesting too deep (over {} levels)", kMaxValueDepth);
  }
}
NestingGuard::~NestingGuard() { --nesting; }

int DepthOver(const std::vector<Value>& children) {
  int depth = 0;
  for (const Value& child : children) depth = std::max(depth, child.Depth());
  if (depth + 1 > kMaxValueDepth) Throw("value nesting too deep (over {} levels)", kMaxValueDepth);
  return depth + 1;
}

Value::Value(std::shared_ptr<List> list) : kind_(Kind::kList), obj_(std::move(list)) {}
Value::Value(std::shared_ptr<Dict> dict, bool is_namespace)
    : kind_(is_namespace ? Kind::kNamespace : Kind::kDict), obj_(std::move(dict)) {}
Value::Value(std::shared_ptr<Function> function)
    : kind_(Kind::kFunction), obj_(std::move(function)) {}
Value::Value(std::shared_ptr<LoopState> loop) : kind_(Kind::kLoop), obj_(std::move(loop)) {}

Value Value::MakeList(std::vector<Value> items, bool is_tuple) {
  auto list = std::make_shared<List>();
  list->depth = DepthOver(items);
  list->items = std::move(items);
  list->is_tuple = is_tuple;
  return Value(std::move(list));
}

double Value::AsDouble() const {
  switch (kind_) {
    case Kind::kFloat: return scalar_.f;
    case Kind::kInt: return static_cast<double>(scalar_.i);
    case Kind::kBool: return scalar_.b ? 1.0 : 0.0;
    default: return 0.0;
  }
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return scalar_.b;
    case Kind::kInt: return scalar_.i != 0;
    case Kind::kFloat: return scalar_.f != 0.0;
    case Kind::kString: return !str_.empty();
    case Kind::kList: return !AsList().items.empty();
    case Kind::kDict: return !AsDict().entries.empty();
    default: return true;
  }
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return AsList().is_tuple ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kLoop: return "LoopContext";
    case Kind::kFunction: return "function";
  }
  return "object";
}

bool Equal(const Value& a, const Value& b) {
  const NestingGuard guard;
  if (a.IsNumber() && b.IsNumber()) {
    if (a.IsFloat() || b.IsFloat()) return a.AsDouble() == b.AsDouble();
    return a.AsInt() == b.AsInt();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.AsString() == b.AsString();
    case Kind::kList: {
      const auto& x = a.AsList();
      const auto& y = b.AsList();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!Equal(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const auto& x = a.AsDict().entries;
      const Dict& y = b.AsDict();
      if (x.size() != y.entries.size()) return false;
      for (const auto& [key, value] : x) {
        const Value* other = y.Find(key);
        if (!other || !Equal(value, *other)) return false;
      }
      return true;
    }
    default: return a.object() == b.object();
  }
}

int Compare(const Value& a, const Value& b) {
  const NestingGuard guard;
  if (a.IsNumber() && b.IsNumber()) {
    if (a.IsFloat() || b.IsFloat()) {
      const double x = a.AsDouble();
      const double y = b.AsDouble();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const int64_t x = a.AsInt();
    const int64_t y = b.AsInt();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.IsString() && b.IsString()) {
    // UTF-8 byte order is code point order, which is how Python orders str.
    const int c = a.AsString().compare(b.AsString());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.IsList() && b.IsList() && a.AsList().is_tuple == b.AsList().is_tuple) {
    const auto& x = a.AsList().items;
    const auto& y = b.AsList().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!Equal(x[i], y[i])) return Compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  Throw("'<' not supported between instances of '{}' and '{}'", a.TypeName(), b.TypeName());
}

}  // namespace zinf::formats::jinja
