// Python's binary operators, iteration, len() and slicing over template values.
#include <cmath>

#include "model_formats/jinja/error.h"
#include "model_formats/jinja/format.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/python_str.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

bool IsIntLike(const Value& v) { return v.IsInt() || v.IsBool(); }

[[noreturn]] void Unsupported(std::string_view op, const Value& a, const Value& b) {
  Throw("unsupported operand type(s) for {}: '{}' and '{}'", op, a.TypeName(), b.TypeName());
}

int64_t Checked(bool overflow, int64_t value) {
  if (overflow) Throw("integer overflow (Python's unbounded integers are not supported)");
  return value;
}

Value Repeat(Interpreter& interpreter, const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.IsString()) {
    interpreter.CheckSize(seq.AsString().size() * static_cast<size_t>(times));
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.AsString();
    return Value(std::move(out));
  }
  const auto& items = seq.AsList().items;
  interpreter.CheckSize(items.size() * static_cast<size_t>(times));
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::MakeList(std::move(out), seq.AsList().is_tuple);
}

double FloorMod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

Value BinaryOp(Interpreter& interpreter, std::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string out = Str(a) + Str(b);
    interpreter.CheckSize(out.size());
    return Value(std::move(out));
  }
  if (op == "in") {
    if (b.IsString()) {
      if (!a.IsString())
        Throw("'in <string>' requires string as left operand, not {}", a.TypeName());
      return Value(b.AsString().find(a.AsString()) != std::string::npos);
    }
    if (b.IsList()) {
      for (const Value& item : b.AsList().items) {
        if (Equal(a, item)) return Value(true);
      }
      return Value(false);
    }
    if (b.IsDict()) return Value(b.AsDict().Find(DictKey(a)) != nullptr);
    if (b.IsUndefined()) return Value(false);
    Throw("argument of type '{}' is not iterable", b.TypeName());
  }
  if (a.IsUndefined()) FailUndefined(a);
  if (b.IsUndefined()) FailUndefined(b);
  const bool numbers = a.IsNumber() && b.IsNumber();
  const bool ints = IsIntLike(a) && IsIntLike(b);
  if (op == "+") {
    if (ints) {
      int64_t r = 0;
      const bool overflow = __builtin_add_overflow(a.AsInt(), b.AsInt(), &r);
      return Value(Checked(overflow, r));
    }
    if (numbers) return Value(a.AsDouble() + b.AsDouble());
    if (a.IsString() && b.IsString()) {
      interpreter.CheckSize(a.AsString().size() + b.AsString().size());
      return Value(a.AsString() + b.AsString());
    }
    if (a.IsList() && b.IsList() && a.AsList().is_tuple == b.AsList().is_tuple) {
      std::vector<Value> items = a.AsList().items;
      interpreter.CheckSize(items.size() + b.AsList().items.size());
      items.insert(items.end(), b.AsList().items.begin(), b.AsList().items.end());
      return Value::MakeList(std::move(items), a.AsList().is_tuple);
    }
    if (a.IsString() || a.IsList()) {
      Throw("can only concatenate {} (not \"{}\") to {}", a.TypeName(), b.TypeName(), a.TypeName());
    }
    Unsupported("+", a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r = 0;
      const bool overflow = __builtin_sub_overflow(a.AsInt(), b.AsInt(), &r);
      return Value(Checked(overflow, r));
    }
    if (numbers) return Value(a.AsDouble() - b.AsDouble());
    Unsupported("-", a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r = 0;
      const bool overflow = __builtin_mul_overflow(a.AsInt(), b.AsInt(), &r);
      return Value(Checked(overflow, r));
    }
    if (numbers) return Value(a.AsDouble() * b.AsDouble());
    if ((a.IsString() || a.IsList()) && IsIntLike(b)) return Repeat(interpreter, a, b.AsInt());
    if ((b.IsString() || b.IsList()) && IsIntLike(a)) return Repeat(interpreter, b, a.AsInt());
    if (a.IsString() || a.IsList()) {
      Throw("can't multiply sequence by non-int of type '{}'", b.TypeName());
    }
    Unsupported("*", a, b);
  }
  if (op == "/") {
    if (!numbers) Unsupported("/", a, b);
    if (b.AsDouble() == 0.0) {
      if (ints) Throw("division by zero");
      Throw("float division by zero");
    }
    return Value(a.AsDouble() / b.AsDouble());
  }
  if (op == "//") {
    if (!numbers) Unsupported("//", a, b);
    if (ints) {
      if (b.AsInt() == 0) Throw("integer division or modulo by zero");
      const int64_t x = a.AsInt();
      const int64_t y = b.AsInt();
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return Value(q);
    }
    if (b.AsDouble() == 0.0) Throw("float floor division by zero");
    return Value(std::floor(a.AsDouble() / b.AsDouble()));
  }
  if (op == "%") {
    if (a.IsString()) return Value(PercentFormat(a.AsString(), b));
    if (!numbers) Unsupported("%", a, b);
    if (ints) {
      if (b.AsInt() == 0) Throw("integer modulo by zero");
      int64_t m = a.AsInt() % b.AsInt();
      if (m != 0 && ((m < 0) != (b.AsInt() < 0))) m += b.AsInt();
      return Value(m);
    }
    if (b.AsDouble() == 0.0) Throw("float modulo");
    return Value(FloorMod(a.AsDouble(), b.AsDouble()));
  }
  if (op == "**") {
    if (!numbers) Unsupported("** or pow()", a, b);
    if (ints && b.AsInt() >= 0) {
      int64_t result = 1;
      int64_t base = a.AsInt();
      for (int64_t e = b.AsInt(); e > 0; --e) {
        if (__builtin_mul_overflow(result, base, &result)) Checked(true, 0);
        if (result == 0 || result == 1) break;
      }
      return Value(result);
    }
    if (a.AsDouble() == 0.0 && b.AsDouble() < 0) {
      Throw("0.0 cannot be raised to a negative power");
    }
    return Value(std::pow(a.AsDouble(), b.AsDouble()));
  }
  Throw("unsupported operator '{}'", op);
}

std::vector<Value> Iterate(const Value& value) {
  switch (value.kind()) {
    case Kind::kUndefined: return {};
    case Kind::kList: return value.AsList().items;
    case Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& entry : value.AsDict().entries) keys.push_back(KeyValue(entry.first));
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : Decode(value.AsString())) {
        std::string s;
        AppendUtf8(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default: Throw("'{}' object is not iterable", value.TypeName());
  }
}

int64_t Length(const Value& value) {
  switch (value.kind()) {
    case Kind::kUndefined: return 0;
    case Kind::kString: return static_cast<int64_t>(CodePointCount(value.AsString()));
    case Kind::kList: return static_cast<int64_t>(value.AsList().items.size());
    case Kind::kDict: return static_cast<int64_t>(value.AsDict().entries.size());
    default: Throw("object of type '{}' has no len()", value.TypeName());
  }
}

Value SliceValue(const Value& value, const Value& start_v, const Value& stop_v,
                 const Value& step_v) {
  auto index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.IsNone()) return std::nullopt;
    if (!v.IsInt() && !v.IsBool()) {
      Throw("slice indices must be integers or None or have an __index__ method ({})", what);
    }
    return v.AsInt();
  };
  const int64_t step = index(step_v, "step").value_or(1);
  if (step == 0) Throw("slice step cannot be zero");
  const bool is_string = value.IsString();
  if (!is_string && !value.IsList()) Throw("'{}' object is not subscriptable", value.TypeName());
  std::vector<char32_t> cps;
  if (is_string) cps = Decode(value.AsString());
  const int64_t n = is_string ? static_cast<int64_t>(cps.size())
                              : static_cast<int64_t>(value.AsList().items.size());
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t start = adjust(index(start_v, "start"), step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(index(stop_v, "stop"), step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picks.push_back(i);
  if (is_string) {
    std::string out;
    for (int64_t i : picks) AppendUtf8(out, cps[static_cast<size_t>(i)]);
    return Value(std::move(out));
  }
  std::vector<Value> out;
  out.reserve(picks.size());
  for (int64_t i : picks) out.push_back(value.AsList().items[static_cast<size_t>(i)]);
  return Value::MakeList(std::move(out), value.AsList().is_tuple);
}

}  // namespace zinf::formats::jinja
