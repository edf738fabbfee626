// The values a Jinja template computes with, modelled on the Python objects jinja2 sees: None,
// bool, int, float, str, list/tuple, dict (insertion-ordered), namespace, loop, callables and
// jinja2's Undefined (which remembers why it is undefined, for the error when it is misused).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zinf::formats::jinja {

class Value;
class Interpreter;

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,       // List, also tuples
  kDict,       // Dict
  kNamespace,  // Dict, mutable through `set ns.attr = ...`
  kLoop,       // LoopState
  kFunction,   // Function
};

// Containers, callables and loop states; `depth` bounds nesting, so printing, comparing and
// destroying a value never recurses deeper than kMaxValueDepth.
struct Object {
  virtual ~Object() = default;
  int depth = 1;
};

// Deep enough for any real tool schema; shallow enough that recursion over a value is safe.
constexpr int kMaxValueDepth = 256;

struct List : Object {
  std::vector<Value> items;
  bool is_tuple = false;
};

struct Dict : Object {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* Find(std::string_view key) const;
  void Set(std::string key, Value value);
};

// Positional and keyword arguments of one call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Function : Object {
  explicit Function(std::string function_name) : name(std::move(function_name)) {}
  virtual Value Call(Interpreter& interpreter, CallArgs& args) = 0;
  // What str() shows: "<Macro 'name'>" for macros.
  virtual std::string Describe() const { return "<function " + name + ">"; }
  std::string name;
};

// The `loop` variable of one for-loop iteration.
struct LoopState : Object {
  std::shared_ptr<List> items;
  int64_t index0 = 0;
  std::vector<Value> last_changed;  // loop.changed's memory
  bool has_last_changed = false;
};

class Value {
 public:
  Value() = default;  // Undefined
  static Value Undefined(std::string message) {
    Value value;
    value.str_ = std::move(message);
    return value;
  }
  static Value None() { return Value(Kind::kNone); }
  Value(bool b) : kind_(Kind::kBool) { scalar_.b = b; }
  Value(int64_t i) : kind_(Kind::kInt) { scalar_.i = i; }
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double f) : kind_(Kind::kFloat) { scalar_.f = f; }
  Value(std::string s) : kind_(Kind::kString), str_(std::move(s)) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(std::shared_ptr<List> list);
  Value(std::shared_ptr<Dict> dict, bool is_namespace = false);
  Value(std::shared_ptr<Function> function);
  Value(std::shared_ptr<LoopState> loop);

  static Value MakeList(std::vector<Value> items, bool is_tuple = false);

  Kind kind() const { return kind_; }
  bool IsUndefined() const { return kind_ == Kind::kUndefined; }
  bool IsNone() const { return kind_ == Kind::kNone; }
  bool IsString() const { return kind_ == Kind::kString; }
  bool IsInt() const { return kind_ == Kind::kInt; }
  bool IsBool() const { return kind_ == Kind::kBool; }
  bool IsFloat() const { return kind_ == Kind::kFloat; }
  bool IsNumber() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || IsBool(); }
  bool IsList() const { return kind_ == Kind::kList; }
  bool IsDict() const { return kind_ == Kind::kDict; }

  bool AsBool() const { return scalar_.b; }
  int64_t AsInt() const { return kind_ == Kind::kBool ? scalar_.b : scalar_.i; }
  double AsDouble() const;                              // int, bool or float
  const std::string& AsString() const { return str_; }  // also Undefined's message
  List& AsList() const { return static_cast<List&>(*obj_); }
  Dict& AsDict() const { return static_cast<Dict&>(*obj_); }  // dict or namespace
  Function& AsFunction() const { return static_cast<Function&>(*obj_); }
  LoopState& AsLoop() const { return static_cast<LoopState&>(*obj_); }
  const std::shared_ptr<Object>& object() const { return obj_; }
  int Depth() const { return obj_ ? obj_->depth : 0; }

  bool Truthy() const;
  // Python's type name, as TypeError messages print it: 'int', 'str', 'NoneType', ...
  const char* TypeName() const;

 private:
  explicit Value(Kind kind) : kind_(kind) {}
  Kind kind_ = Kind::kUndefined;
  union {
    bool b;
    int64_t i;
    double f;
  } scalar_{};
  std::string str_;  // kString: UTF-8 text; kUndefined: the message an error on it reports
  std::shared_ptr<Object> obj_;
};

// Python ==, as jinja2 compares (1 == 1.0 == True; containers element-wise).
bool Equal(const Value& a, const Value& b);
// Python <, or a TypeError for unordered types: negative, zero or positive.
int Compare(const Value& a, const Value& b);

// Dict keys are strings; the rare int, float, bool or None key (`{1: 'x'}`) is stored under a
// form no UTF-8 string takes ("\xFF" + kind + text), so string lookups never meet it.
std::string DictKey(const Value& key);        // fails for keys Python cannot hash (list, dict)
Value KeyValue(const std::string& key);       // the key as the template sees it
std::string JsonKey(const std::string& key);  // json.dumps' string for the key

// Counts the levels of a recursion over a value (printing, comparing, dumping); fails past
// kMaxValueDepth, which a namespace holding itself would otherwise turn into a stack overflow.
class NestingGuard {
 public:
  NestingGuard();
  ~NestingGuard();
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
};

// Fails with "value nesting too deep" when a container holding `children` would pass the bound.
int DepthOver(const std::vector<Value>& children);

}  // namespace zinf::formats::jinja
