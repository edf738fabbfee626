// jinja2's filters on strings and numbers, plus `default` and transformers' `tojson`.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "model_formats/jinja/builtins.h"
#include "model_formats/jinja/builtins_table.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/format.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/methods.h"
#include "model_formats/jinja/python_json.h"
#include "model_formats/jinja/python_str.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {

std::string SoftStr(const Value& value) { return value.IsString() ? value.AsString() : Str(value); }

namespace {

// A str method applied to str(value), for the filters that are one.
Value StrMethodOf(Interpreter& interpreter, const Value& value, const char* method,
                  CallArgs& args) {
  BoundMethod bound(Value(SoftStr(value)), method);
  return bound.Call(interpreter, args);
}

Value Trim(Interpreter& in, const Value& v, CallArgs& args) {
  return StrMethodOf(in, v, "strip", args);
}
Value Upper(Interpreter&, const Value& v, CallArgs&) { return Value(PyUpper(SoftStr(v))); }
Value Lower(Interpreter&, const Value& v, CallArgs&) { return Value(PyLower(SoftStr(v))); }
Value Capitalize(Interpreter& in, const Value& v, CallArgs& args) {
  return StrMethodOf(in, v, "capitalize", args);
}
Value Center(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("center", args, {"width"});
  CallArgs call;
  call.positional.push_back(binder.GetOr(0, Value(int64_t{80})));
  return StrMethodOf(in, v, "center", call);
}

// jinja2's do_title: words start after whitespace, '-', '(', '{', '[' or '<'.
Value Title(Interpreter&, const Value& v, CallArgs&) {
  std::string out;
  bool word_start = true;
  for (char32_t c : Decode(SoftStr(v))) {
    const bool separator = IsPySpace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (separator) {
      AppendUtf8(out, c);
      word_start = true;
    } else {
      word_start ? AppendUpper(out, c) : AppendLower(out, c);
      word_start = false;
    }
  }
  return Value(std::move(out));
}

Value Replace(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("replace", args, {"old", "new", "count"});
  CallArgs call;
  call.positional = {Value(SoftStr(binder.GetOr(0, Value()))),
                     Value(SoftStr(binder.GetOr(1, Value())))};
  const Value count = binder.GetOr(2, Value::None());
  call.positional.push_back(count.IsNone() ? Value(int64_t{-1}) : count);
  return StrMethodOf(in, v, "replace", call);
}

Value Indent(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder binder("indent", args, {"width", "first", "blank"});
  const Value width = binder.GetOr(0, Value(int64_t{4}));
  const std::string indention =
      width.IsString() ? width.AsString()
                       : std::string(static_cast<size_t>(std::max<int64_t>(0, width.AsInt())), ' ');
  const bool first = binder.GetOr(1, Value(false)).Truthy();
  const bool blank = binder.GetOr(2, Value(false)).Truthy();
  std::vector<std::string> lines = PySplitLines(SoftStr(v) + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += '\n';
      if (blank || !lines[i].empty()) out += indention;
    }
    out += lines[i];
  }
  if (first) out = indention + out;
  return Value(std::move(out));
}

// Python's int(str): surrounding whitespace, a sign and underscores between digits allowed.
std::optional<int64_t> ParseInt(const std::string& text, int base) {
  std::string s = PyStrip(text, nullptr, true, true);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() &&
        std::isalnum(static_cast<unsigned char>(s[i - 1])) &&
        std::isalnum(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    digits += s[i];
  }
  if (digits.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(digits.c_str(), &end, base);
  if (errno != 0 || *end != '\0' || std::isspace(static_cast<unsigned char>(digits[0])))
    return std::nullopt;
  return value;
}

std::optional<double> ParseFloat(const std::string& text) {
  const std::string s = PyStrip(text, nullptr, true, true);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  const std::string lower = PyLower(s);
  if (lower.find("0x") != std::string::npos) return std::nullopt;  // strtod reads hex; Python not
  return value;
}

Value Int(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder binder("int", args, {"default", "base"});
  const Value fallback = binder.GetOr(0, Value(int64_t{0}));
  const int base = static_cast<int>(binder.GetOr(1, Value(int64_t{10})).AsInt());
  if (v.IsInt() || v.IsBool()) return Value(v.AsInt());
  if (v.IsFloat()) {
    if (!std::isfinite(v.AsDouble())) return fallback;
    return Value(static_cast<int64_t>(std::trunc(v.AsDouble())));
  }
  if (v.IsString()) {
    if (auto parsed = ParseInt(v.AsString(), base)) return Value(*parsed);
    if (auto parsed = ParseFloat(v.AsString()); parsed && std::isfinite(*parsed)) {
      return Value(static_cast<int64_t>(std::trunc(*parsed)));
    }
  }
  return fallback;
}

Value Float(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder binder("float", args, {"default"});
  if (v.IsNumber()) return Value(v.AsDouble());
  if (v.IsString()) {
    if (auto parsed = ParseFloat(v.AsString())) return Value(*parsed);
  }
  return binder.GetOr(0, Value(0.0));
}

Value Abs(Interpreter&, const Value& v, CallArgs&) {
  if (v.IsFloat()) return Value(std::fabs(v.AsDouble()));
  if (v.IsInt() || v.IsBool()) return Value(v.AsInt() < 0 ? -v.AsInt() : v.AsInt());
  if (v.IsUndefined()) FailUndefined(v);
  Throw("bad operand type for abs(): '{}'", v.TypeName());
}

Value Round(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder binder("round", args, {"precision", "method"});
  const int64_t precision = binder.GetOr(0, Value(int64_t{0})).AsInt();
  const std::string method = binder.GetOr(1, Value("common")).AsString();
  if (v.IsUndefined()) FailUndefined(v);
  if (!v.IsNumber()) Throw("type {} doesn't define __round__ method", v.TypeName());
  if (method == "common") {
    if (!v.IsFloat()) {  // round(int, n) stays an int, rounded half to even for n < 0
      if (precision >= 0) return Value(v.AsInt());
      if (precision < -18) return Value(int64_t{0});
      int64_t scale = 1;
      for (int64_t i = 0; i < -precision; ++i) scale *= 10;
      const int64_t x = v.AsInt();
      int64_t q = x / scale;
      int64_t r = x % scale;
      if (r < 0) {
        r += scale;
        --q;
      }
      if (2 * r > scale || (2 * r == scale && (q & 1))) ++q;
      return Value(q * scale);
    }
    // Python rounds the exact binary value half to even, which is what printf does.
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f",
                  static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), v.AsDouble());
    return Value(std::strtod(buf, nullptr));
  }
  if (method != "ceil" && method != "floor") Throw("method must be common, ceil or floor");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.AsDouble() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value String(Interpreter&, const Value& v, CallArgs&) { return Value(SoftStr(v)); }
Value Safe(Interpreter&, const Value& v, CallArgs&) { return v.IsString() ? v : Value(SoftStr(v)); }

Value Escape(Interpreter&, const Value& v, CallArgs&) {
  std::string out;
  for (char c : SoftStr(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value Format(Interpreter&, const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty()) {
    Throw("can't handle positional and keyword arguments at the same time");
  }
  if (!args.keyword.empty()) {
    auto dict = std::make_shared<Dict>();
    for (auto& [key, value] : args.keyword) dict->Set(key, value);
    return Value(PercentFormat(SoftStr(v), Value(dict)));
  }
  return Value(PercentFormat(SoftStr(v), Value::MakeList(args.positional, true)));
}

Value WordCount(Interpreter&, const Value& v, CallArgs&) {
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : Decode(SoftStr(v))) {
    const bool word_char = IsPyAlnum(c) || c == '_';
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value(words);
}

Value Truncate(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder binder("truncate", args, {"length", "killwords", "end", "leeway"});
  const std::vector<char32_t> s = Decode(SoftStr(v));
  const int64_t length = binder.GetOr(0, Value(int64_t{255})).AsInt();
  const bool killwords = binder.GetOr(1, Value(false)).Truthy();
  const std::string end = binder.GetOr(2, Value("...")).AsString();
  const Value leeway_value = binder.GetOr(3, Value::None());
  const int64_t leeway = leeway_value.IsNone() ? 5 : leeway_value.AsInt();
  const int64_t end_length = static_cast<int64_t>(CodePointCount(end));
  if (length < end_length) Throw("expected length >= {}, got {}", end_length, length);
  if (leeway < 0) Throw("expected leeway >= 0, got {}", leeway);
  if (static_cast<int64_t>(s.size()) <= length + leeway) return Value(Encode(s));
  std::string head = Encode(std::vector<char32_t>(s.begin(), s.begin() + (length - end_length)));
  if (!killwords) {
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return Value(head + end);
}

Value Default(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder binder("default", args, {"default_value", "boolean"});
  const bool boolean = binder.GetOr(1, Value(false)).Truthy();
  if (v.IsUndefined() || (boolean && !v.Truthy())) return binder.GetOr(0, Value(""));
  return v;
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent, separators, sort_keys).
Value ToJson(Interpreter& interpreter, const Value& v, CallArgs& args) {
  ArgBinder binder("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions options;
  options.ensure_ascii = binder.GetOr(0, Value(false)).Truthy();
  const Value indent = binder.GetOr(1, Value::None());
  if (indent.IsString()) {
    options.indent = indent.AsString();
  } else if (indent.IsInt()) {
    options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.AsInt())), ' ');
  } else if (!indent.IsNone()) {
    Throw("tojson: indent must be an int or a string, not {}", indent.TypeName());
  }
  const Value separators = binder.GetOr(2, Value::None());
  if (!separators.IsNone()) {
    if (!separators.IsList() || separators.AsList().items.size() != 2 ||
        !separators.AsList().items[0].IsString() || !separators.AsList().items[1].IsString()) {
      Throw("tojson: separators must be a pair of strings");
    }
    options.item_separator = separators.AsList().items[0].AsString();
    options.key_separator = separators.AsList().items[1].AsString();
  }
  options.sort_keys = binder.GetOr(3, Value(false)).Truthy();
  std::string json = DumpJson(v, options);
  interpreter.CheckSize(json.size());
  return Value(std::move(json));
}

}  // namespace

Value GetAttribute(Interpreter& interpreter, const Value& item, const Value& attribute) {
  if (!attribute.IsString()) return interpreter.GetItem(item, attribute);
  Value current = item;
  const std::string& path = attribute.AsString();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    current = numeric ? interpreter.GetItem(current, Value(static_cast<int64_t>(std::stoll(part))))
                      : interpreter.GetItem(current, Value(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

const FilterTable& StringFilters() {
  static const FilterTable table = {
      {"trim", Trim},           {"upper", Upper},
      {"lower", Lower},         {"capitalize", Capitalize},
      {"title", Title},         {"replace", Replace},
      {"indent", Indent},       {"int", Int},
      {"float", Float},         {"abs", Abs},
      {"round", Round},         {"string", String},
      {"safe", Safe},           {"e", Escape},
      {"escape", Escape},       {"forceescape", Escape},
      {"format", Format},       {"center", Center},
      {"wordcount", WordCount}, {"truncate", Truncate},
      {"default", Default},     {"d", Default},
      {"tojson", ToJson},
  };
  return table;
}

}  // namespace zinf::formats::jinja
