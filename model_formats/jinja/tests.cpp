// jinja2's tests (`x is defined`, `x is divisibleby 3`, ...).
#include "model_formats/jinja/builtins.h"
#include "model_formats/jinja/builtins_table.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

const Value& Other(CallArgs& args, const char* test) {
  ArgBinder binder(test, args, {"other"});
  if (!binder.Get(0)) Throw("{}() missing 1 required positional argument", test);
  return *binder.Get(0);
}

bool Compared(const Value& a, const Value& b, const char* op) {
  if (a.IsUndefined()) FailUndefined(a);
  if (b.IsUndefined()) FailUndefined(b);
  const int c = Compare(a, b);
  const std::string_view o = op;
  return o == "<" ? c < 0 : o == "<=" ? c <= 0 : o == ">" ? c > 0 : c >= 0;
}

int64_t IntOf(const Value& v) {
  if (v.IsUndefined()) FailUndefined(v);
  if (!v.IsInt() && !v.IsBool())
    Throw("unsupported operand type(s) for %: '{}' and 'int'", v.TypeName());
  return v.AsInt();
}

bool Odd(Interpreter&, const Value& v, CallArgs&) { return IntOf(v) % 2 != 0; }
bool Even(Interpreter&, const Value& v, CallArgs&) { return IntOf(v) % 2 == 0; }
bool DivisibleBy(Interpreter&, const Value& v, CallArgs& args) {
  const Value& num = Other(args, "divisibleby");
  if (v.IsFloat() || num.IsFloat()) {
    const double d = num.AsDouble();
    if (d == 0.0) Throw("float modulo");
    return std::fmod(v.AsDouble(), d) == 0.0;
  }
  const int64_t d = IntOf(num);
  if (d == 0) Throw("integer division or modulo by zero");
  return IntOf(v) % d == 0;
}

bool Cased(const Value& v, bool lower) {
  const std::string s = SoftStr(v);
  bool any = false;
  for (char32_t c : Decode(s)) {
    if (lower ? IsPyUpper(c) : IsPyLower(c)) return false;
    any = any || IsPyUpper(c) || IsPyLower(c);
  }
  return any;
}

bool SameAs(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  if (a.object()) return a.object() == b.object();
  return Equal(a, b);
}

}  // namespace

const TestTable& Tests() {
  static const TestTable table = {
      {"defined", [](Interpreter&, const Value& v, CallArgs&) { return !v.IsUndefined(); }},
      {"undefined", [](Interpreter&, const Value& v, CallArgs&) { return v.IsUndefined(); }},
      {"none", [](Interpreter&, const Value& v, CallArgs&) { return v.IsNone(); }},
      {"boolean", [](Interpreter&, const Value& v, CallArgs&) { return v.IsBool(); }},
      {"true", [](Interpreter&, const Value& v, CallArgs&) { return v.IsBool() && v.AsBool(); }},
      {"false", [](Interpreter&, const Value& v, CallArgs&) { return v.IsBool() && !v.AsBool(); }},
      {"integer", [](Interpreter&, const Value& v, CallArgs&) { return v.IsInt(); }},
      {"float", [](Interpreter&, const Value& v, CallArgs&) { return v.IsFloat(); }},
      {"number", [](Interpreter&, const Value& v, CallArgs&) { return v.IsNumber(); }},
      {"string", [](Interpreter&, const Value& v, CallArgs&) { return v.IsString(); }},
      {"mapping", [](Interpreter&, const Value& v, CallArgs&) { return v.IsDict(); }},
      {"iterable",
       [](Interpreter&, const Value& v, CallArgs&) {
         return v.IsUndefined() || v.IsString() || v.IsList() || v.IsDict() ||
                v.kind() == Kind::kLoop;
       }},
      {"sequence",
       [](Interpreter&, const Value& v, CallArgs&) {
         return v.IsUndefined() || v.IsString() || v.IsList() || v.IsDict();
       }},
      {"callable", [](Interpreter&, const Value& v,
                      CallArgs&) { return v.kind() == Kind::kFunction || v.IsUndefined(); }},
      {"odd", Odd},
      {"even", Even},
      {"divisibleby", DivisibleBy},
      {"eq", [](Interpreter&, const Value& v, CallArgs& a) { return Equal(v, Other(a, "eq")); }},
      {"equalto",
       [](Interpreter&, const Value& v, CallArgs& a) { return Equal(v, Other(a, "eq")); }},
      {"==", [](Interpreter&, const Value& v, CallArgs& a) { return Equal(v, Other(a, "eq")); }},
      {"ne", [](Interpreter&, const Value& v, CallArgs& a) { return !Equal(v, Other(a, "ne")); }},
      {"!=", [](Interpreter&, const Value& v, CallArgs& a) { return !Equal(v, Other(a, "ne")); }},
      {"lt",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "lt"), "<"); }},
      {"lessthan",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "lt"), "<"); }},
      {"<",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "lt"), "<"); }},
      {"le",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "le"), "<="); }},
      {"<=",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "le"), "<="); }},
      {"gt",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "gt"), ">"); }},
      {"greaterthan",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "gt"), ">"); }},
      {">",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "gt"), ">"); }},
      {"ge",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "ge"), ">="); }},
      {">=",
       [](Interpreter&, const Value& v, CallArgs& a) { return Compared(v, Other(a, "ge"), ">="); }},
      {"in", [](Interpreter& in, const Value& v,
                CallArgs& a) { return BinaryOp(in, "in", v, Other(a, "in")).AsBool(); }},
      {"lower", [](Interpreter&, const Value& v, CallArgs&) { return Cased(v, true); }},
      {"upper", [](Interpreter&, const Value& v, CallArgs&) { return Cased(v, false); }},
      {"sameas",
       [](Interpreter&, const Value& v, CallArgs& a) { return SameAs(v, Other(a, "sameas")); }},
      {"escaped", [](Interpreter&, const Value&, CallArgs&) { return false; }},
      {"filter", [](Interpreter&, const Value& v,
                    CallArgs&) { return v.IsString() && FindFilter(v.AsString()) != nullptr; }},
      {"test", [](Interpreter&, const Value& v,
                  CallArgs&) { return v.IsString() && FindTest(v.AsString()) != nullptr; }},
  };
  return table;
}

}  // namespace zinf::formats::jinja
