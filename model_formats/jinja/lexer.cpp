// jinja2's lexer rules (jinja2/lexer.py, 3.1) for the delimiters {{ }}, {% %} and {# #}.
#include "model_formats/jinja/lexer.h"

#include <cstring>

#include "model_formats/jinja/error.h"
#include "model_formats/jinja/unicode.h"

namespace zinf::formats::jinja {
namespace {

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

// jinja2 joins the source's lines with "\n" (so "\r\n" and "\r" become "\n") and, without
// keep_trailing_newline, drops one newline at the very end.
std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's str.rstrip(): trailing whitespace, Unicode included.
size_t RstripEnd(std::string_view text) {
  std::vector<char32_t> cps = Decode(text);
  size_t end = cps.size();
  while (end > 0 && IsPySpace(cps[end - 1])) --end;
  size_t bytes = 0;
  for (size_t i = 0; i < end; ++i) {
    std::string tmp;
    AppendUtf8(tmp, cps[i]);
    bytes += tmp.size();
  }
  return bytes;
}

// Python's unicode-escape decoding of a string literal's body, as jinja2 applies it.
std::string Unescape(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    auto hex = [&](size_t digits) {
      char32_t value = 0;
      for (size_t k = 1; k <= digits; ++k) {
        if (i + k >= body.size()) Throw("truncated \\x escape in a string literal");
        const char h = body[i + k];
        value <<= 4;
        if (h >= '0' && h <= '9') value |= static_cast<char32_t>(h - '0');
        else if (h >= 'a' && h <= 'f') value |= static_cast<char32_t>(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') value |= static_cast<char32_t>(h - 'A' + 10);
        else Throw("invalid \\x escape in a string literal");
      }
      AppendUtf8(out, value);
      i += digits;
    };
    switch (c) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (c >= '0' && c <= '7') {
          char32_t value = 0;
          size_t k = 0;
          while (k < 3 && i < body.size() && body[i] >= '0' && body[i] <= '7') {
            value = value * 8 + static_cast<char32_t>(body[i] - '0');
            ++i;
            ++k;
          }
          --i;
          AppendUtf8(out, value);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> Run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t start = FindTagStart(pos_);
      if (start == std::string::npos) {
        Emit(TokenType::kText, src_.substr(pos_), pos_);
        pos_ = src_.size();
        break;
      }
      const char kind = src_[start + 1];
      const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      std::string text = src_.substr(pos_, start - pos_);
      if (sign == '-') {
        text.resize(RstripEnd(text));
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: spaces and tabs alone between a line start and a block or comment.
        const size_t line_pos = text.rfind('\n') + 1;  // npos + 1 == 0
        if (line_pos > 0 || line_starting) {
          if (text.find_first_not_of(" \t", line_pos) == std::string::npos) text.resize(line_pos);
        }
      }
      if (!text.empty()) Emit(TokenType::kText, text, pos_);
      const size_t body = start + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      if (kind == '#') {
        line_starting = Comment(start, body);
      } else if (kind == '%' && Raw(start, body, &line_starting)) {
      } else {
        line_starting = Tag(kind, start, body);
      }
    }
    tokens_.push_back(Token{TokenType::kEnd, "", 0, 0, line_, Col(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t FindTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // Advances line_ and line_start_ over src_[scanned_, to).
  void Track(size_t to) {
    for (; scanned_ < to && scanned_ < src_.size(); ++scanned_) {
      if (src_[scanned_] == '\n') {
        ++line_;
        line_start_ = scanned_ + 1;
      }
    }
  }
  int Col(size_t at) {
    if (at < scanned_) {  // only when an error points back to where a tag began
      line_ = 1;
      line_start_ = 0;
      scanned_ = 0;
    }
    Track(at);
    return static_cast<int>(at - line_start_) + 1;
  }
  [[noreturn]] void Fail(size_t at, const std::string& message) {
    TemplateError error(message);
    const int col = Col(at);
    error.Locate(line_, col);
    throw error;
  }
  void Emit(TokenType type, std::string text, size_t at) {
    Token token;
    token.type = type;
    token.col = Col(at);
    token.line = line_;
    token.text = std::move(text);
    tokens_.push_back(std::move(token));
  }

  // After a tag's closing delimiter at `end_pos`: '-' eats all whitespace, '+' nothing, and
  // otherwise trim_blocks eats one newline (blocks and comments only). Returns line_starting.
  bool CloseTag(size_t after, char sign, bool trim_newline) {
    pos_ = after;
    bool newline_last = false;
    if (sign == '-') {
      while (pos_ < src_.size() && IsAsciiSpace(src_[pos_])) newline_last = src_[pos_++] == '\n';
    } else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      newline_last = true;
    }
    return newline_last;
  }

  bool Comment(size_t start, size_t body) {
    const size_t end = src_.find("#}", body);
    if (end == std::string::npos) Fail(start, "Missing end of comment tag");
    const char sign =
        end > body && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    return CloseTag(end + 2, sign, true);
  }

  // {% raw %}...{% endraw %}: the body is text. Returns false when the tag is not `raw`.
  bool Raw(size_t start, size_t body, bool* line_starting) {
    size_t i = body;
    while (i < src_.size() && IsAsciiSpace(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && IsNameChar(src_[i + 3])))
      return false;
    i += 3;
    while (i < src_.size() && IsAsciiSpace(src_[i])) ++i;
    char sign = '\0';
    if (src_.compare(i, 3, "-%}") == 0) {
      sign = '-';
      ++i;
    }
    if (src_.compare(i, 2, "%}") != 0) return false;
    CloseTag(i + 2, sign, false);  // raw's opening tag has no trim_blocks suffix in jinja2
    // Find {% endraw %}, with optional whitespace control on both sides.
    for (size_t at = src_.find("{%", pos_); at != std::string::npos; at = src_.find("{%", at + 2)) {
      size_t j = at + 2;
      const char open_sign =
          j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j++] : '\0';
      while (j < src_.size() && IsAsciiSpace(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      while (j < src_.size() && IsAsciiSpace(src_[j])) ++j;
      char close_sign = '\0';
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) close_sign = src_[j++];
      if (src_.compare(j, 2, "%}") != 0) continue;
      std::string text = src_.substr(pos_, at - pos_);
      if (open_sign == '-') {
        text.resize(RstripEnd(text));
      } else if (open_sign != '+') {
        const size_t line_pos = text.rfind('\n') + 1;
        if (line_pos > 0 && text.find_first_not_of(" \t", line_pos) == std::string::npos) {
          text.resize(line_pos);
        }
      }
      if (!text.empty()) Emit(TokenType::kText, text, pos_);
      *line_starting = CloseTag(j + 2, close_sign, true);
      return true;
    }
    Fail(start, "Missing end of raw directive");
  }

  // An expression tag; returns line_starting after it.
  bool Tag(char kind, size_t start, size_t body) {
    Emit(kind == '{' ? TokenType::kVariableBegin : TokenType::kBlockBegin,
         kind == '{' ? "{{" : "{%", start);
    const char close = kind == '{' ? '}' : '%';
    std::vector<char> brackets;
    size_t i = body;
    while (true) {
      while (i < src_.size() && IsAsciiSpace(src_[i])) ++i;
      if (i >= src_.size())
        Fail(start, kind == '{' ? "unexpected end of template, expected 'end of print statement'."
                                : "unexpected end of template, expected 'end of statement block'.");
      if (brackets.empty()) {
        char sign = '\0';
        size_t at = i;
        if ((src_[i] == '-' || (src_[i] == '+' && kind == '%')) && i + 1 < src_.size()) {
          sign = src_[i];
          ++at;
        }
        if (src_.compare(at, 2, std::string{close, '}'}) == 0) {
          Emit(kind == '{' ? TokenType::kVariableEnd : TokenType::kBlockEnd, "", i);
          return CloseTag(at + 2, sign, kind == '%');
        }
      }
      i = Lex(i, brackets);
    }
  }

  // One token inside a tag starting at src_[i]; returns the position after it.
  size_t Lex(size_t i, std::vector<char>& brackets) {
    const char c = src_[i];
    Token token;
    token.col = Col(i);
    token.line = line_;
    size_t j = i;
    if (IsDigit(c)) {
      auto digits = [&](size_t k) {
        while (k < src_.size() && (IsDigit(src_[k]) ||
                                   (src_[k] == '_' && k + 1 < src_.size() && IsDigit(src_[k + 1]))))
          ++k;
        return k;
      };
      if (c == '0' && i + 1 < src_.size() && std::strchr("xXoObB", src_[i + 1])) {
        const int base = (src_[i + 1] == 'x' || src_[i + 1] == 'X')   ? 16
                         : (src_[i + 1] == 'o' || src_[i + 1] == 'O') ? 8
                                                                      : 2;
        j = i + 2;
        std::string digits_text;
        while (j < src_.size() &&
               (std::isxdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) {
          if (src_[j] != '_') digits_text += src_[j];
          ++j;
        }
        token.type = TokenType::kInteger;
        token.integer = std::stoll(digits_text, nullptr, base);
      } else {
        j = digits(i);
        bool is_float = false;
        if (j + 1 < src_.size() && src_[j] == '.' && IsDigit(src_[j + 1])) {
          j = digits(j + 1);
          is_float = true;
        }
        if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
          size_t k = j + 1;
          if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
          if (k < src_.size() && IsDigit(src_[k])) {
            j = digits(k);
            is_float = true;
          }
        }
        std::string text;
        for (size_t k = i; k < j; ++k) {
          if (src_[k] != '_') text += src_[k];
        }
        if (is_float) {
          token.type = TokenType::kFloat;
          token.number = std::stod(text);
        } else {
          token.type = TokenType::kInteger;
          try {
            token.integer = std::stoll(text);
          } catch (const std::exception&) {
            Fail(i, "integer literal too large: " + text);
          }
        }
      }
      token.text = src_.substr(i, j - i);
    } else if (IsNameStart(c)) {
      while (j < src_.size() && IsNameChar(src_[j])) ++j;
      token.type = TokenType::kName;
      token.text = src_.substr(i, j - i);
    } else if (c == '\'' || c == '"') {
      j = i + 1;
      while (j < src_.size() && src_[j] != c) j += src_[j] == '\\' ? 2 : 1;
      if (j >= src_.size())
        Fail(i, "unexpected char '" + std::string(1, c) + "' (unterminated string)");
      token.type = TokenType::kString;
      token.text = Unescape(std::string_view(src_).substr(i + 1, j - i - 1));
      ++j;
    } else {
      static const char* const kTwoChar[] = {"**", "//", "==", "!=", ">=", "<="};
      token.type = TokenType::kOperator;
      for (const char* op : kTwoChar) {
        if (src_.compare(i, 2, op) == 0) token.text = op;
      }
      if (token.text.empty()) {
        if (!std::strchr("+-/*%~[](){}><=.:|,;", c))
          Fail(i, "unexpected char '" + std::string(1, c) + "'");
        token.text = std::string(1, c);
      }
      j = i + token.text.size();
      if (c == '(' || c == '[' || c == '{') {
        brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      } else if (c == ')' || c == ']' || c == '}') {
        if (brackets.empty()) Fail(i, "unexpected '" + std::string(1, c) + "'");
        if (brackets.back() != c)
          Fail(i, "unexpected '" + std::string(1, c) + "', expected '" +
                      std::string(1, brackets.back()) + "'");
        brackets.pop_back();
      }
    }
    tokens_.push_back(std::move(token));
    return j;
  }

  std::string src_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  int line_ = 1;
  size_t line_start_ = 0;
  size_t scanned_ = 0;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source) {
  return Lexer(NormalizeNewlines(source)).Run();
}

}  // namespace zinf::formats::jinja
