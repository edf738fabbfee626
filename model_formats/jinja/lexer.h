// Splits template source into tokens the way jinja2's lexer does with trim_blocks and
// lstrip_blocks on: text between tags (whitespace control applied), tag delimiters, and the
// names, literals and operators inside tags.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zinf::formats::jinja {

enum class TokenType : uint8_t {
  kText,
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEnd,
};

struct Token {
  TokenType type = TokenType::kEnd;
  std::string text;  // kText: the text; kName/kOperator: itself; kString: the unescaped value
  int64_t integer = 0;
  double number = 0.0;
  int line = 1;
  int col = 1;
};

// Fails with TemplateError (located) on an unterminated tag, comment, string or raw block.
std::vector<Token> Tokenize(std::string_view source);

}  // namespace zinf::formats::jinja
