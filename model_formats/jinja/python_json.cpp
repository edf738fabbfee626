// json.dumps with Python's separators, indentation, escaping and float formatting.
#include "model_formats/jinja/python_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model_formats/jinja/error.h"
#include "model_formats/jinja/python_str.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

void AppendJsonString(std::string& out, std::string_view text, bool ensure_ascii) {
  out += '"';
  for (char32_t c : Decode(text)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else if (ensure_ascii && c > 0x7E) {
          if (c >= 0x10000) {
            const char32_t v = c - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          }
        } else {
          AppendUtf8(out, c);
        }
    }
  }
  out += '"';
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& options)
      : options_(options),
        item_separator_(options.item_separator.value_or(options.indent ? "," : ", ")),
        key_separator_(options.key_separator.value_or(": ")) {}

  void Dump(const Value& value, int level) {
    const NestingGuard guard;
    switch (value.kind()) {
      case Kind::kNone: out_ += "null"; return;
      case Kind::kBool: out_ += value.AsBool() ? "true" : "false"; return;
      case Kind::kInt: out_ += std::to_string(value.AsInt()); return;
      case Kind::kFloat: {
        const double f = value.AsDouble();
        if (std::isnan(f)) {
          out_ += "NaN";
        } else if (std::isinf(f)) {
          out_ += f > 0 ? "Infinity" : "-Infinity";
        } else {
          out_ += FloatRepr(f);
        }
        return;
      }
      case Kind::kString: AppendJsonString(out_, value.AsString(), options_.ensure_ascii); return;
      case Kind::kList: {
        const auto& items = value.AsList().items;
        if (items.empty()) {
          out_ += "[]";
          return;
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out_ += item_separator_;
          Newline(level + 1);
          Dump(items[i], level + 1);
        }
        Newline(level);
        out_ += ']';
        return;
      }
      case Kind::kDict: {
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& entry : value.AsDict().entries) entries.push_back(&entry);
        if (entries.empty()) {
          out_ += "{}";
          return;
        }
        if (options_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto* a, const auto* b) { return a->first < b->first; });
        }
        out_ += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out_ += item_separator_;
          Newline(level + 1);
          AppendJsonString(out_, JsonKey(entries[i]->first), options_.ensure_ascii);
          out_ += key_separator_;
          Dump(entries[i]->second, level + 1);
        }
        Newline(level);
        out_ += '}';
        return;
      }
      default: Throw("Object of type {} is not JSON serializable", value.TypeName());
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  void Newline(int level) {
    if (!options_.indent) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *options_.indent;
  }

  const JsonDumpOptions& options_;
  const std::string item_separator_;
  const std::string key_separator_;
  std::string out_;
};

}  // namespace

std::string JsonKey(const std::string& key) {
  const Value value = KeyValue(key);
  switch (value.kind()) {
    case Kind::kString: return key;
    case Kind::kBool: return value.AsBool() ? "true" : "false";
    case Kind::kNone: return "null";
    case Kind::kFloat: return FloatRepr(value.AsDouble());
    default: return std::to_string(value.AsInt());
  }
}

std::string DumpJson(const Value& value, const JsonDumpOptions& options) {
  Dumper dumper(options);
  dumper.Dump(value, 0);
  return dumper.Take();
}

Value FromJson(const nlohmann::ordered_json& json) {
  const NestingGuard guard;
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null: return Value::None();
    case Type::boolean: return Value(json.get<bool>());
    case Type::number_integer: return Value(json.get<int64_t>());
    case Type::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case Type::number_float: return Value(json.get<double>());
    case Type::string: return Value(json.get<std::string>());
    case Type::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(FromJson(item));
      return Value::MakeList(std::move(items));
    }
    case Type::object: {
      auto dict = std::make_shared<Dict>();
      std::vector<Value> values;
      for (const auto& [key, item] : json.items()) {
        dict->entries.emplace_back(key, FromJson(item));
      }
      int depth = 0;
      for (const auto& entry : dict->entries) depth = std::max(depth, entry.second.Depth());
      if (depth + 1 > kMaxValueDepth)
        Throw("value nesting too deep (over {} levels)", kMaxValueDepth);
      dict->depth = depth + 1;
      return Value(std::move(dict));
    }
    default: Throw("unsupported JSON value of type {}", json.type_name());
  }
}

}  // namespace zinf::formats::jinja
