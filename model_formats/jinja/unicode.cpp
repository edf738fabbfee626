// UTF-8 coding and Python's per-character predicates over utf8proc's Unicode tables.
#include "model_formats/jinja/unicode.h"

#include <utf8proc.h>

#include <algorithm>

namespace zinf::formats::jinja {

std::vector<char32_t> Decode(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = 0;
    const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i);
    const utf8proc_ssize_t n =
        utf8proc_iterate(bytes, static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {
      out.push_back(static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

void AppendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string Encode(const std::vector<char32_t>& code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) AppendUtf8(out, c);
  return out;
}

size_t CodePointCount(std::string_view text) {
  size_t n = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

namespace {
utf8proc_category_t Category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}
}  // namespace

bool IsPySpace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  if (c == 0x85) return true;
  const auto cat = Category(c);
  if (cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP) {
    return true;
  }
  return false;
}

bool IsPyPrintable(char32_t c) {
  if (c == ' ') return true;
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
  }
}

bool IsPyAlpha(char32_t c) {
  const auto cat = Category(c);
  return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}

bool IsPyDigit(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_ND; }

bool IsPyAlnum(char32_t c) {
  const auto cat = Category(c);
  return IsPyAlpha(c) || cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_NO;
}

bool IsPyLower(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_LL; }
bool IsPyUpper(char32_t c) {
  const auto cat = Category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT;
}

bool IsLineBreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

// utf8proc maps one code point to one; Python's full mappings differ for a few, of which only
// the German sharp s and dotted capital I show up in practice.
void AppendUpper(std::string& out, char32_t c) {
  if (c == 0xDF) {
    out += "SS";
    return;
  }
  AppendUtf8(out, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))));
}

void AppendLower(std::string& out, char32_t c) {
  if (c == 0x130) {
    out += "i\xCC\x87";
    return;
  }
  AppendUtf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

void AppendTitle(std::string& out, char32_t c) {
  if (c == 0xDF) {
    out += "Ss";
    return;
  }
  AppendUtf8(out, static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))));
}

std::string PyUpper(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : Decode(text)) AppendUpper(out, c);
  return out;
}

std::string PyLower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : Decode(text)) AppendLower(out, c);
  return out;
}

std::string PyStrip(std::string_view text, const std::string* chars, bool left, bool right) {
  const std::vector<char32_t> cps = Decode(text);
  std::vector<char32_t> set;
  if (chars) set = Decode(*chars);
  auto strip = [&](char32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : IsPySpace(c);
  };
  size_t begin = 0;
  size_t end = cps.size();
  if (left) {
    while (begin < end && strip(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip(cps[end - 1])) --end;
  }
  return Encode(std::vector<char32_t>(cps.begin() + begin, cps.begin() + end));
}

std::vector<std::string> PySplitLines(std::string_view text) {
  const std::vector<char32_t> cps = Decode(text);
  std::vector<std::string> lines;
  std::string line;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (IsLineBreak(cps[i])) {
      if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
      lines.push_back(std::move(line));
      line.clear();
    } else {
      AppendUtf8(line, cps[i]);
    }
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace zinf::formats::jinja
