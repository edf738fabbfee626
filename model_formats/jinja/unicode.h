// UTF-8 and the Python str semantics built on code points: length, indexing, slicing, case
// mapping, whitespace and printability as Python 3 defines them (via utf8proc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zinf::formats::jinja {

// Code points of UTF-8 text; an invalid byte decodes as itself (templates see valid input).
std::vector<char32_t> Decode(std::string_view text);
std::string Encode(const std::vector<char32_t>& code_points);
void AppendUtf8(std::string& out, char32_t code_point);
size_t CodePointCount(std::string_view text);

bool IsPySpace(char32_t c);      // str.isspace
bool IsPyPrintable(char32_t c);  // str.isprintable, which decides repr's escapes
bool IsPyAlnum(char32_t c);      // \w without the underscore
bool IsPyAlpha(char32_t c);
bool IsPyDigit(char32_t c);
bool IsPyLower(char32_t c);  // has an uppercase mapping
bool IsPyUpper(char32_t c);
bool IsLineBreak(char32_t c);  // what str.splitlines splits at

std::string PyUpper(std::string_view text);
std::string PyLower(std::string_view text);
void AppendUpper(std::string& out, char32_t c);
void AppendLower(std::string& out, char32_t c);
void AppendTitle(std::string& out, char32_t c);

// str.strip / lstrip / rstrip: `chars` null strips whitespace.
std::string PyStrip(std::string_view text, const std::string* chars, bool left, bool right);
// str.splitlines(), without the line ends.
std::vector<std::string> PySplitLines(std::string_view text);

}  // namespace zinf::formats::jinja
