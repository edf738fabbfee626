// str()/repr() with CPython's rules for quoting strings and formatting floats.
#include "model_formats/jinja/python_str.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {

std::string FloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then CPython's layout: positional while the decimal point falls
  // within -4 < exponent < 16, scientific with a two-digit exponent otherwise.
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, result.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  const int exponent = std::atoi(sci.c_str() + e + 1);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int decpt = exponent + 1;  // digits before the decimal point
  std::string out = sign;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." +
             digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

std::string StringRepr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : Decode(text)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x7F && c >= 0x20) {
      out += static_cast<char>(c);
    } else if (IsPyPrintable(c)) {
      AppendUtf8(out, c);
    } else if (c < 0x100) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else if (c < 0x10000) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
    }
  }
  out += quote;
  return out;
}

namespace {

void AppendItems(std::string& out, const Dict& dict) {
  out += '{';
  bool first = true;
  for (const auto& [key, value] : dict.entries) {
    if (!first) out += ", ";
    first = false;
    out += Repr(KeyValue(key));
    out += ": ";
    out += Repr(value);
  }
  out += '}';
}

}  // namespace

std::string Repr(const Value& value) {
  const NestingGuard guard;
  switch (value.kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kString: return StringRepr(value.AsString());
    case Kind::kList: {
      const List& list = value.AsList();
      std::string out(1, list.is_tuple ? '(' : '[');
      for (size_t i = 0; i < list.items.size(); ++i) {
        if (i > 0) out += ", ";
        out += Repr(list.items[i]);
      }
      if (list.is_tuple && list.items.size() == 1) out += ',';
      out += list.is_tuple ? ')' : ']';
      return out;
    }
    case Kind::kDict: {
      std::string out;
      AppendItems(out, value.AsDict());
      return out;
    }
    case Kind::kNamespace: {
      std::string out = "<Namespace ";
      AppendItems(out, value.AsDict());
      return out + ">";
    }
    default: return Str(value);
  }
}

std::string Str(const Value& value) {
  switch (value.kind()) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return value.AsBool() ? "True" : "False";
    case Kind::kInt: return std::to_string(value.AsInt());
    case Kind::kFloat: return FloatRepr(value.AsDouble());
    case Kind::kString: return value.AsString();
    case Kind::kLoop: {
      const LoopState& loop = value.AsLoop();
      return fmt::format("<LoopContext {}/{}>", loop.index0 + 1, loop.items->items.size());
    }
    case Kind::kFunction: return value.AsFunction().Describe();
    default: return Repr(value);
  }
}

}  // namespace zinf::formats::jinja
