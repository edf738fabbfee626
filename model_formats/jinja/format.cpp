// Python's %-formatting and str.format for the conversions templates use (%s %r %d %f %x ...,
// {} {0} {name} with fill, alignment, width, precision and type).
#include "model_formats/jinja/format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "model_formats/jinja/error.h"
#include "model_formats/jinja/python_str.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

std::string Printf(const std::string& spec, double value) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), spec.c_str(), value);
  return buf;
}

std::string Printf(const std::string& spec, long long value) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), spec.c_str(), value);
  return buf;
}

void Pad(std::string& text, char align, const std::string& fill, int64_t width) {
  const int64_t n = static_cast<int64_t>(CodePointCount(text));
  if (width <= n) return;
  const int64_t total = width - n;
  const int64_t left = align == '>' ? total : align == '^' ? total / 2 : 0;
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += text;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  text = std::move(out);
}

// One %-conversion of `value`: flags/width/precision as written, `type` the conversion char.
std::string Convert(const Value& value, const std::string& flags, char type) {
  if (value.IsUndefined() && type != 's') throw TemplateError(value.AsString());
  switch (type) {
    case 's':
    case 'r':
    case 'a': {
      std::string text = type == 's' ? Str(value) : Repr(value);
      const bool left = flags.find('-') != std::string::npos;
      std::string digits;
      for (char c : flags) {
        if (c == '.') break;
        if (c >= '0' && c <= '9') digits += c;
      }
      if (!digits.empty()) Pad(text, left ? '<' : '>', " ", std::stoll(digits));
      const size_t dot = flags.find('.');
      if (dot != std::string::npos) {
        const size_t precision = std::stoul("0" + flags.substr(dot + 1));
        std::vector<char32_t> cps = Decode(text);
        if (cps.size() > precision) cps.resize(precision);
        text = Encode(cps);
      }
      return text;
    }
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o':
      if (!value.IsNumber())
        Throw("%{} format: a real number is required, not {}", type, value.TypeName());
      return Printf(
          "%" + flags + "ll" + (type == 'i' || type == 'u' ? 'd' : type),
          static_cast<long long>(value.IsFloat() ? std::trunc(value.AsDouble()) : value.AsInt()));
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
      if (!value.IsNumber()) Throw("must be real number, not {}", value.TypeName());
      return Printf("%" + flags + type, value.AsDouble());
    case 'c':
      if (value.IsString()) return value.AsString();
      if (value.IsInt()) {
        std::string out;
        AppendUtf8(out, static_cast<char32_t>(value.AsInt()));
        return out;
      }
      Throw("%c requires int or char");
    default: Throw("unsupported format character '{}'", type);
  }
}

}  // namespace

std::string PercentFormat(const std::string& format, const Value& args) {
  std::vector<Value> positional;
  const bool is_tuple = args.IsList() && args.AsList().is_tuple;
  if (is_tuple) {
    positional = args.AsList().items;
  } else {
    positional.push_back(args);
  }
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) Throw("incomplete format");
    const Value* value = nullptr;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string::npos) Throw("incomplete format key");
      if (!args.IsDict()) Throw("format requires a mapping");
      value = args.AsDict().Find(format.substr(i + 1, close - i - 1));
      if (!value) Throw("KeyError: '{}'", format.substr(i + 1, close - i - 1));
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < format.size() &&
           std::string_view("-+ #0123456789.").find(format[i]) != std::string_view::npos) {
      flags += format[i++];
    }
    if (i >= format.size()) Throw("incomplete format");
    const char type = format[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!value) {
      if (next >= positional.size()) Throw("not enough arguments for format string");
      value = &positional[next++];
    }
    out += Convert(*value, flags, type);
  }
  if (!used_mapping && next < positional.size() && !(positional.size() == 1 && args.IsDict()) &&
      (is_tuple || next == 0)) {
    Throw("not all arguments converted during string formatting");
  }
  return out;
}

namespace {

// A str.format spec: [[fill]align][sign][0][width][,][.precision][type].
std::string ApplySpec(const Value& value, const std::string& spec) {
  if (spec.empty()) return Str(value);
  const std::vector<char32_t> cps = Decode(spec);
  size_t i = 0;
  std::string fill = " ";
  char align = '\0';
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    fill.clear();
    AppendUtf8(fill, cps[0]);
    align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    align = static_cast<char>(cps[0]);
    i = 1;
  }
  std::string sign;
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' '))
    sign = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == '0' && !align) {
    fill = "0";
    align = '=';
    ++i;
  }
  int64_t width = 0;
  while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') width = width * 10 + (cps[i++] - '0');
  std::string precision;
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9')
      precision += static_cast<char>(cps[i++]);
  }
  const char type = i < cps.size() ? static_cast<char>(cps[i++]) : '\0';
  if (i != cps.size()) Throw("Invalid format specifier '{}'", spec);
  std::string text;
  if (type == '\0' || type == 's') {
    text = Str(value);
    if (!precision.empty() && value.IsString()) {
      std::vector<char32_t> chars = Decode(text);
      chars.resize(std::min(chars.size(), static_cast<size_t>(std::stoll(precision))));
      text = Encode(chars);
    } else if (!precision.empty() && value.IsFloat()) {
      text = Printf("%" + sign + "." + precision + "g", value.AsDouble());
    }
    if (!align) align = value.IsNumber() ? '>' : '<';
  } else {
    if (!value.IsNumber())
      Throw("Unknown format code '{}' for object of type '{}'", type, value.TypeName());
    if (type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b') {
      if (value.IsFloat()) Throw("Unknown format code '{}' for object of type 'float'", type);
      text = type == 'b' ? fmt::format("{:b}", value.AsInt())
                         : Printf("%" + sign + "ll" + type, static_cast<long long>(value.AsInt()));
    } else if (type == '%') {
      text = Printf("%" + sign + "." + (precision.empty() ? "6" : precision) + "f",
                    value.AsDouble() * 100) +
             "%";
    } else {
      text =
          Printf("%" + sign + "." + (precision.empty() ? "6" : precision) + type, value.AsDouble());
    }
    if (!align) align = '>';
  }
  if (align == '=') {
    const bool has_sign = !text.empty() && (text[0] == '-' || text[0] == '+' || text[0] == ' ');
    std::string body = has_sign ? text.substr(1) : text;
    Pad(body, '>', fill, width - (has_sign ? 1 : 0));
    return (has_sign ? text.substr(0, 1) : "") + body;
  }
  Pad(text, align, fill, width);
  return text;
}

}  // namespace

std::string BraceFormat(const std::string& format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') ++i;
      else Throw("Single '}}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string::npos) Throw("Single '{{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    std::string spec;
    char conversion = '\0';
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : '\0';
      field.resize(bang);
    }
    const Value* value = nullptr;
    if (field.empty() || field.find_first_not_of("0123456789") == std::string::npos) {
      const size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) {
        Throw("Replacement index {} out of range for positional args tuple", index);
      }
      value = &args.positional[index];
    } else {
      for (const auto& [key, v] : args.keyword) {
        if (key == field) value = &v;
      }
      if (!value) Throw("KeyError: '{}'", field);
    }
    const Value converted = conversion == 'r'   ? Value(Repr(*value))
                            : conversion == 's' ? Value(Str(*value))
                                                : *value;
    out += ApplySpec(converted, spec);
  }
  return out;
}

}  // namespace zinf::formats::jinja
