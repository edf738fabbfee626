// jinja2's filters on sequences and mappings (length, first, join, map, selectattr, sort, ...).
// Where jinja2 returns a generator (map, select, unique, reverse) these return the list.
#include <algorithm>

#include "model_formats/jinja/builtins.h"
#include "model_formats/jinja/builtins_table.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/methods.h"
#include "model_formats/jinja/python_str.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

Value IgnoreCase(const Value& v) { return v.IsString() ? Value(PyLower(v.AsString())) : v; }

// The sort/min/max/unique key of one item: its attribute (or itself), case-folded unless
// case_sensitive. Several comma-separated attributes give a tuple.
Value KeyOf(Interpreter& in, const Value& item, const Value& attribute, bool case_sensitive) {
  auto one = [&](const Value& attr) {
    Value key = attr.IsNone() ? item : GetAttribute(in, item, attr);
    return case_sensitive ? key : IgnoreCase(key);
  };
  if (attribute.IsString() && attribute.AsString().find(',') != std::string::npos) {
    std::vector<Value> parts;
    std::string path = attribute.AsString();
    size_t start = 0;
    while (start <= path.size()) {
      const size_t comma = path.find(',', start);
      parts.push_back(one(Value(
          path.substr(start, comma == std::string::npos ? std::string::npos : comma - start))));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return Value::MakeList(std::move(parts), true);
  }
  return one(attribute);
}

Value Length(Interpreter&, const Value& v, CallArgs&) { return Value(Length(v)); }

Value First(Interpreter&, const Value& v, CallArgs&) {
  std::vector<Value> items = Iterate(v);
  if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
  return items.front();
}

Value Last(Interpreter&, const Value& v, CallArgs&) {
  std::vector<Value> items = Iterate(v);
  if (items.empty()) return Value::Undefined("No last item, sequence was empty.");
  return items.back();
}

Value Join(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("join", args, {"d", "attribute"});
  const std::string separator = SoftStr(binder.GetOr(0, Value("")));
  const Value attribute = binder.GetOr(1, Value::None());
  std::string out;
  bool first = true;
  for (const Value& item : Iterate(v)) {
    if (!first) out += separator;
    first = false;
    out += SoftStr(attribute.IsNone() ? item : GetAttribute(in, item, attribute));
    in.CheckSize(out.size());
  }
  return Value(std::move(out));
}

Value Items(Interpreter&, const Value& v, CallArgs&) {
  if (v.IsUndefined()) return Value::MakeList({});
  if (!v.IsDict()) Throw("Can only get item pairs from a mapping.");
  std::vector<Value> items;
  for (const auto& [key, value] : v.AsDict().entries)
    items.push_back(Value::MakeList({KeyValue(key), value}, true));
  return Value::MakeList(std::move(items));
}

Value ToList(Interpreter&, const Value& v, CallArgs&) { return Value::MakeList(Iterate(v)); }

// select/reject/selectattr/rejectattr.
Value Select(Interpreter& in, const Value& v, CallArgs& args, bool keep, bool by_attribute) {
  size_t offset = 0;
  Value attribute = Value::None();
  if (by_attribute) {
    if (args.positional.empty()) Throw("Missing parameter for attribute name");
    attribute = args.positional[0];
    offset = 1;
  }
  TestFn test = nullptr;
  CallArgs test_args;
  if (args.positional.size() > offset) {
    const Value& name = args.positional[offset];
    if (!name.IsString() || !(test = FindTest(name.AsString()))) {
      Throw("No test named {}.", Repr(name));
    }
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(offset + 1),
                                args.positional.end());
    test_args.keyword = args.keyword;
  }
  std::vector<Value> out;
  for (const Value& item : Iterate(v)) {
    in.CountWork(1);
    const Value subject = by_attribute ? GetAttribute(in, item, attribute) : item;
    CallArgs call = test_args;
    const bool passed = test ? test(in, subject, call) : subject.Truthy();
    if (passed == keep) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

Value Map(Interpreter& in, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (args.positional.empty()) {
    Value attribute;
    Value fallback = Value::None();
    bool has_attribute = false;
    for (auto& [key, value] : args.keyword) {
      if (key == "attribute") {
        attribute = value;
        has_attribute = true;
      } else if (key == "default") {
        fallback = value;
      } else {
        Throw("Unexpected keyword argument '{}'", key);
      }
    }
    if (!has_attribute) Throw("map requires a filter argument");
    for (const Value& item : Iterate(v)) {
      in.CountWork(1);
      Value mapped = GetAttribute(in, item, attribute);
      out.push_back(mapped.IsUndefined() && !fallback.IsNone() ? fallback : mapped);
    }
    return Value::MakeList(std::move(out));
  }
  const Value& name = args.positional[0];
  const FilterFn filter = name.IsString() ? FindFilter(name.AsString()) : nullptr;
  if (!filter) Throw("No filter named {}.", Repr(name));
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : Iterate(v)) {
    in.CountWork(1);
    CallArgs call = filter_args;
    out.push_back(filter(in, item, call));
  }
  return Value::MakeList(std::move(out));
}

Value Sum(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("sum", args, {"attribute", "start"});
  const Value attribute = binder.GetOr(0, Value::None());
  Value total = binder.GetOr(1, Value(int64_t{0}));
  for (const Value& item : Iterate(v)) {
    total = BinaryOp(in, "+", total, attribute.IsNone() ? item : GetAttribute(in, item, attribute));
  }
  return total;
}

Value MinMax(Interpreter& in, const Value& v, CallArgs& args, bool max) {
  ArgBinder binder(max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = binder.GetOr(0, Value(false)).Truthy();
  const Value attribute = binder.GetOr(1, Value::None());
  const std::vector<Value> items = Iterate(v);
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = KeyOf(in, items[0], attribute, case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = KeyOf(in, items[i], attribute, case_sensitive);
    const int c = Compare(key, best_key);
    if (max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value Unique(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = binder.GetOr(0, Value(false)).Truthy();
  const Value attribute = binder.GetOr(1, Value::None());
  std::vector<Value> out;
  std::vector<Value> seen;
  for (const Value& item : Iterate(v)) {
    in.CountWork(1);
    Value key = KeyOf(in, item, attribute, case_sensitive);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return Equal(s, key); })) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return Value::MakeList(std::move(out));
}

Value SortBy(Interpreter& in, std::vector<Value> items, std::vector<Value> keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  in.CountWork(static_cast<int64_t>(items.size()));
  // Python's reverse=True keeps equal items in their original order, like a stable sort on >.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reverse ? Compare(keys[b], keys[a]) < 0 : Compare(keys[a], keys[b]) < 0;
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (size_t i : order) out.push_back(std::move(items[i]));
  return Value::MakeList(std::move(out));
}

Value Sort(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = binder.GetOr(0, Value(false)).Truthy();
  const bool case_sensitive = binder.GetOr(1, Value(false)).Truthy();
  const Value attribute = binder.GetOr(2, Value::None());
  std::vector<Value> items = Iterate(v);
  std::vector<Value> keys;
  for (const Value& item : items) keys.push_back(KeyOf(in, item, attribute, case_sensitive));
  return SortBy(in, std::move(items), std::move(keys), reverse);
}

Value DictSort(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = binder.GetOr(0, Value(false)).Truthy();
  const std::string by = SoftStr(binder.GetOr(1, Value("key")));
  const bool reverse = binder.GetOr(2, Value(false)).Truthy();
  if (by != "key" && by != "value") Throw("You can only sort by either \"key\" or \"value\"");
  CallArgs none;
  std::vector<Value> items = Items(in, v, none).AsList().items;
  std::vector<Value> keys;
  for (const Value& item : items) {
    const Value& key = item.AsList().items[by == "key" ? 0 : 1];
    keys.push_back(case_sensitive ? key : IgnoreCase(key));
  }
  return SortBy(in, std::move(items), std::move(keys), reverse);
}

Value Reverse(Interpreter&, const Value& v, CallArgs&) {
  if (v.IsString()) {
    std::vector<char32_t> cps = Decode(v.AsString());
    std::reverse(cps.begin(), cps.end());
    return Value(Encode(cps));
  }
  std::vector<Value> items = Iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::MakeList(std::move(items));
}

Value Batch(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder binder("batch", args, {"linecount", "fill_with"});
  const int64_t count = binder.GetOr(0, Value(int64_t{1})).AsInt();
  if (count <= 0) Throw("batch: linecount must be positive");
  const Value* fill = binder.Get(1);
  std::vector<Value> out;
  std::vector<Value> row;
  for (const Value& item : Iterate(v)) {
    row.push_back(item);
    if (static_cast<int64_t>(row.size()) == count) {
      out.push_back(Value::MakeList(std::move(row)));
      row.clear();
    }
  }
  if (!row.empty()) {
    if (fill && !fill->IsNone()) {
      while (static_cast<int64_t>(row.size()) < count) row.push_back(*fill);
    }
    out.push_back(Value::MakeList(std::move(row)));
  }
  return Value::MakeList(std::move(out));
}

Value Attr(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder binder("attr", args, {"name"});
  const std::string name = SoftStr(binder.GetOr(0, Value("")));
  // jinja2's attr filter is Python's getattr alone: a dict's keys are not attributes.
  if (v.IsDict() && FindMethod(v, name) == MethodKind::kNone) {
    return Value::Undefined("'dict object' has no attribute '" + name + "'");
  }
  return in.GetAttr(v, name);
}

}  // namespace

const FilterTable& SequenceFilters() {
  static const FilterTable table = {
      {"length", Length},
      {"count", Length},
      {"first", First},
      {"last", Last},
      {"join", Join},
      {"items", Items},
      {"list", ToList},
      {"select",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, true, false); }},
      {"reject",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, false, false); }},
      {"selectattr",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, true, true); }},
      {"rejectattr",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, false, true); }},
      {"map", Map},
      {"sum", Sum},
      {"min", [](Interpreter& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, false); }},
      {"max", [](Interpreter& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, true); }},
      {"unique", Unique},
      {"sort", Sort},
      {"dictsort", DictSort},
      {"reverse", Reverse},
      {"batch", Batch},
      {"attr", Attr},
  };
  return table;
}

}  // namespace zinf::formats::jinja
