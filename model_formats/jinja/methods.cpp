// The str, dict and list methods templates call, with CPython's semantics on code points.
#include "model_formats/jinja/methods.h"

#include <algorithm>
#include <array>

#include "model_formats/jinja/builtins.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/format.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/python_str.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

constexpr std::array<std::string_view, 47> kStrMethods = {
    "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
    "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
    "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
    "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
    "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
    "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
    "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
    "swapcase",     "title",       "translate", "upper",      "zfill"};
constexpr std::array<std::string_view, 6> kDictMethods = {"copy",  "fromkeys", "get",
                                                          "items", "keys",     "values"};
constexpr std::array<std::string_view, 5> kDictMutating = {"clear", "pop", "popitem", "setdefault",
                                                           "update"};
constexpr std::array<std::string_view, 3> kListMethods = {"copy", "count", "index"};
constexpr std::array<std::string_view, 8> kListMutating = {"append", "clear",  "extend",  "insert",
                                                           "pop",    "remove", "reverse", "sort"};

template <size_t N>
bool In(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const std::string& StrArg(const Value* value, const char* method) {
  if (!value || !value->IsString()) {
    Throw("{}() argument must be str, not {}", method, value ? value->TypeName() : "nothing");
  }
  return value->AsString();
}

// Code point index of a byte offset.
int64_t CpIndex(const std::string& text, size_t byte_offset) {
  return static_cast<int64_t>(CodePointCount(std::string_view(text).substr(0, byte_offset)));
}

// Python's start/end arguments of find/count/startswith, as a code point sub-range in bytes.
std::string_view Window(const std::string& text, const ArgBinder& args, size_t start_index,
                        size_t* offset) {
  const std::vector<char32_t> cps = Decode(text);
  const int64_t n = static_cast<int64_t>(cps.size());
  auto clamp = [n](const Value* v, int64_t fallback) {
    if (!v || v->IsNone()) return fallback;
    int64_t x = v->AsInt();
    if (x < 0) x = std::max<int64_t>(0, x + n);
    return std::min(x, n);
  };
  const int64_t start = clamp(args.Get(start_index), 0);
  const int64_t end = clamp(args.Get(start_index + 1), n);
  size_t begin_byte = 0;
  size_t end_byte = 0;
  size_t byte = 0;
  for (int64_t i = 0; i <= n; ++i) {
    if (i == start) begin_byte = byte;
    if (i == end) end_byte = byte;
    if (i < n) {
      std::string tmp;
      AppendUtf8(tmp, cps[static_cast<size_t>(i)]);
      byte += tmp.size();
    }
  }
  *offset = begin_byte;
  if (end < start) return std::string_view(text).substr(begin_byte, 0);
  return std::string_view(text).substr(begin_byte, end_byte - begin_byte);
}

Value Split(const std::string& text, const Value* sep_value, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!sep_value || sep_value->IsNone()) {
    std::vector<char32_t> cps = Decode(text);
    if (from_right) std::reverse(cps.begin(), cps.end());
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && IsPySpace(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t end = cps.size();
        while (end > i && IsPySpace(cps[end - 1])) --end;
        std::vector<char32_t> rest(cps.begin() + static_cast<std::ptrdiff_t>(i),
                                   cps.begin() + static_cast<std::ptrdiff_t>(end));
        if (from_right) std::reverse(rest.begin(), rest.end());
        parts.push_back(Encode(rest));
        break;
      }
      const size_t start = i;
      while (i < cps.size() && !IsPySpace(cps[i])) ++i;
      std::vector<char32_t> word(cps.begin() + static_cast<std::ptrdiff_t>(start),
                                 cps.begin() + static_cast<std::ptrdiff_t>(i));
      if (from_right) std::reverse(word.begin(), word.end());
      parts.push_back(Encode(word));
    }
    if (from_right) std::reverse(parts.begin(), parts.end());
  } else {
    const std::string& sep = StrArg(sep_value, "split");
    if (sep.empty()) Throw("empty separator");
    if (!from_right) {
      size_t pos = 0;
      while (true) {
        const size_t at = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)
                              ? std::string::npos
                              : text.find(sep, pos);
        if (at == std::string::npos) {
          parts.push_back(text.substr(pos));
          break;
        }
        parts.push_back(text.substr(pos, at - pos));
        pos = at + sep.size();
      }
    } else {
      size_t end = text.size();
      while (true) {
        const size_t at =
            (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) || end < sep.size()
                ? std::string::npos
                : text.rfind(sep, end - sep.size());
        if (at == std::string::npos) {
          parts.push_back(text.substr(0, end));
          break;
        }
        parts.push_back(text.substr(at + sep.size(), end - at - sep.size()));
        end = at;
      }
      std::reverse(parts.begin(), parts.end());
    }
  }
  std::vector<Value> items;
  for (auto& part : parts) items.emplace_back(std::move(part));
  return Value::MakeList(std::move(items));
}

bool AffixMatch(const std::string& text, const ArgBinder& args, bool prefix, const char* method) {
  size_t offset = 0;
  const std::string_view window = Window(text, args, 1, &offset);
  const Value* affix = args.Get(0);
  std::vector<Value> candidates;
  if (affix && affix->IsList() && affix->AsList().is_tuple) {
    candidates = affix->AsList().items;
  } else {
    candidates.push_back(affix ? *affix : Value());
  }
  for (const Value& candidate : candidates) {
    if (!candidate.IsString()) {
      Throw("{} first arg must be str or a tuple of str, not {}", method, candidate.TypeName());
    }
    const std::string& s = candidate.AsString();
    if (s.size() > window.size()) continue;
    if (prefix ? window.substr(0, s.size()) == s : window.substr(window.size() - s.size()) == s) {
      return true;
    }
  }
  return false;
}

std::string Pad(const std::string& text, int64_t width, const std::string& fill, int where) {
  const int64_t n = static_cast<int64_t>(CodePointCount(text));
  if (width <= n) return text;
  const int64_t total = width - n;
  // str.center puts the extra space on the right when the odd one out, unless the width is odd.
  int64_t left = where < 0 ? 0 : where > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += text;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

Value StrMethod(Interpreter& interpreter, const std::string& s, const std::string& name,
                CallArgs& call) {
  if (name == "format") return Value(BraceFormat(s, call));
  if (name == "startswith" || name == "endswith") {
    ArgBinder args(name.c_str(), call, {"prefix", "start", "end"});
    return Value(AffixMatch(s, args, name == "startswith", name.c_str()));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder args(name.c_str(), call, {"chars"});
    const Value* chars = args.Get(0);
    const std::string* set = chars && !chars->IsNone() ? &StrArg(chars, name.c_str()) : nullptr;
    return Value(PyStrip(s, set, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder args(name.c_str(), call, {"sep", "maxsplit"});
    return Split(s, args.Get(0), args.GetOr(1, Value(int64_t{-1})).AsInt(), name == "rsplit");
  }
  if (name == "splitlines") {
    std::vector<Value> items;
    for (auto& line : PySplitLines(s)) items.emplace_back(std::move(line));
    return Value::MakeList(std::move(items));
  }
  if (name == "replace") {
    ArgBinder args(name.c_str(), call, {"old", "new", "count"});
    const std::string& old_text = StrArg(args.Get(0), "replace");
    const std::string& new_text = StrArg(args.Get(1), "replace");
    int64_t count = args.GetOr(2, Value(int64_t{-1})).AsInt();
    std::string out;
    if (old_text.empty()) {
      const std::vector<char32_t> cps = Decode(s);
      for (size_t i = 0; i <= cps.size(); ++i) {
        if (count != 0) {
          out += new_text;
          --count;
        }
        if (i < cps.size()) AppendUtf8(out, cps[i]);
      }
    } else {
      size_t pos = 0;
      for (size_t at; count != 0 && (at = s.find(old_text, pos)) != std::string::npos; --count) {
        out.append(s, pos, at - pos);
        out += new_text;
        pos = at + old_text.size();
      }
      out.append(s, pos);
    }
    interpreter.CheckSize(out.size());
    return Value(std::move(out));
  }
  if (name == "upper") return Value(PyUpper(s));
  if (name == "lower" || name == "casefold") return Value(PyLower(s));
  if (name == "title" || name == "capitalize" || name == "swapcase") {
    std::string out;
    bool previous_cased = false;
    bool first = true;
    for (char32_t c : Decode(s)) {
      if (name == "swapcase") {
        IsPyUpper(c)   ? AppendLower(out, c)
        : IsPyLower(c) ? AppendUpper(out, c)
                       : AppendUtf8(out, c);
      } else if (name == "capitalize") {
        first ? AppendTitle(out, c) : AppendLower(out, c);
      } else {
        previous_cased ? AppendLower(out, c) : AppendTitle(out, c);
        previous_cased = IsPyUpper(c) || IsPyLower(c);
      }
      first = false;
    }
    return Value(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    ArgBinder args(name.c_str(), call, {"sub", "start", "end"});
    const std::string& sub = StrArg(args.Get(0), name.c_str());
    size_t offset = 0;
    const std::string_view window = Window(s, args, 1, &offset);
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(CodePointCount(window) + 1));
      int64_t n = 0;
      for (size_t at = window.find(sub); at != std::string_view::npos;
           at = window.find(sub, at + sub.size()))
        ++n;
      return Value(n);
    }
    const size_t at = name[0] == 'r' ? window.rfind(sub) : window.find(sub);
    if (at == std::string_view::npos) {
      if (name.find("index") != std::string::npos) Throw("substring not found");
      return Value(int64_t{-1});
    }
    return Value(CpIndex(s, offset + at));
  }
  if (name == "join") {
    ArgBinder args(name.c_str(), call, {"iterable"});
    std::string out;
    bool first = true;
    for (const Value& item : Iterate(args.GetOr(0, Value()))) {
      if (!item.IsString())
        Throw("sequence item: expected str instance, {} found", item.TypeName());
      if (!first) out += s;
      first = false;
      out += item.AsString();
    }
    return Value(std::move(out));
  }
  if (name.rfind("is", 0) == 0) {
    const std::vector<char32_t> cps = Decode(s);
    if (name == "isascii")
      return Value(std::all_of(cps.begin(), cps.end(), [](char32_t c) { return c < 0x80; }));
    if (cps.empty()) return Value(false);
    bool (*predicate)(char32_t) = nullptr;
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") predicate = IsPyDigit;
    if (name == "isalpha") predicate = IsPyAlpha;
    if (name == "isalnum") predicate = IsPyAlnum;
    if (name == "isspace") predicate = IsPySpace;
    if (predicate) return Value(std::all_of(cps.begin(), cps.end(), predicate));
    if (name == "istitle") {  // cased runs start upper-case, and there is one
      bool previous_cased = false;
      bool any = false;
      for (char32_t c : cps) {
        if (IsPyUpper(c)) {
          if (previous_cased) return Value(false);
          previous_cased = any = true;
        } else if (IsPyLower(c)) {
          if (!previous_cased) return Value(false);
          previous_cased = true;
        } else {
          previous_cased = false;
        }
      }
      return Value(any);
    }
    if (name == "islower" || name == "isupper") {
      const bool want_lower = name == "islower";
      bool any_cased = false;
      for (char32_t c : cps) {
        if ((want_lower && IsPyUpper(c)) || (!want_lower && IsPyLower(c))) return Value(false);
        any_cased = any_cased || IsPyUpper(c) || IsPyLower(c);
      }
      return Value(any_cased);
    }
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ArgBinder args(name.c_str(), call, {"affix"});
    const std::string& affix = StrArg(args.Get(0), name.c_str());
    if (name == "removeprefix" && s.rfind(affix, 0) == 0) return Value(s.substr(affix.size()));
    if (name == "removesuffix" && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0) {
      return Value(s.substr(0, s.size() - affix.size()));
    }
    return Value(s);
  }
  if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
    ArgBinder args(name.c_str(), call, {"width", "fillchar"});
    const int64_t width = args.GetOr(0, Value(int64_t{0})).AsInt();
    interpreter.CheckSize(static_cast<size_t>(std::max<int64_t>(width, 0)));
    if (name == "zfill") {
      const bool signed_text = !s.empty() && (s[0] == '-' || s[0] == '+');
      std::string padded =
          Pad(signed_text ? s.substr(1) : s, width - (signed_text ? 1 : 0), "0", 1);
      return Value(signed_text ? s.substr(0, 1) + padded : padded);
    }
    const std::string fill = args.GetOr(1, Value(" ")).AsString();
    return Value(Pad(s, width, fill, name == "center" ? 0 : name == "ljust" ? -1 : 1));
  }
  if (name == "partition" || name == "rpartition") {
    ArgBinder args(name.c_str(), call, {"sep"});
    const std::string& sep = StrArg(args.Get(0), name.c_str());
    if (sep.empty()) Throw("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos) {
      return name == "partition" ? Value::MakeList({Value(s), Value(""), Value("")}, true)
                                 : Value::MakeList({Value(""), Value(""), Value(s)}, true);
    }
    return Value::MakeList({Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))},
                           true);
  }
  Throw("str.{}() is not supported in chat templates", name);
}

}  // namespace

MethodKind FindMethod(const Value& object, std::string_view name) {
  if (object.IsString()) return In(kStrMethods, name) ? MethodKind::kSafe : MethodKind::kNone;
  if (object.IsDict()) {
    if (In(kDictMethods, name)) return MethodKind::kSafe;
    return In(kDictMutating, name) ? MethodKind::kMutating : MethodKind::kNone;
  }
  if (object.IsList()) {
    if (In(kListMethods, name)) return MethodKind::kSafe;
    if (object.AsList().is_tuple) return MethodKind::kNone;
    return In(kListMutating, name) ? MethodKind::kMutating : MethodKind::kNone;
  }
  return MethodKind::kNone;
}

Value BoundMethod::Call(Interpreter& interpreter, CallArgs& call) {
  if (self.IsString()) return StrMethod(interpreter, self.AsString(), name, call);
  if (self.IsDict()) {
    const Dict& dict = self.AsDict();
    if (name == "get") {
      ArgBinder args("get", call, {"key", "default"});
      const Value* key = args.Get(0);
      const Value* found = key && key->IsString() ? dict.Find(key->AsString()) : nullptr;
      return found ? *found : args.GetOr(1, Value::None());
    }
    std::vector<Value> items;
    if (name == "copy") return self;
    for (const auto& [key, value] : dict.entries) {
      if (name == "keys") items.push_back(KeyValue(key));
      if (name == "values") items.push_back(value);
      if (name == "items") items.push_back(Value::MakeList({KeyValue(key), value}, true));
    }
    if (name == "keys" || name == "values" || name == "items")
      return Value::MakeList(std::move(items));
    Throw("dict.{}() is not supported in chat templates", name);
  }
  const auto& items = self.AsList().items;
  if (name == "copy") return self;
  ArgBinder args(name.c_str(), call, {"value"});
  const Value needle = args.GetOr(0, Value());
  if (name == "count") {
    return Value(static_cast<int64_t>(std::count_if(
        items.begin(), items.end(), [&](const Value& v) { return Equal(v, needle); })));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (Equal(items[i], needle)) return Value(static_cast<int64_t>(i));
  }
  Throw("{} is not in list", Repr(needle));
}

}  // namespace zinf::formats::jinja
