// Builds the syntax tree from tokens with jinja2's grammar and precedence. Filters and tests are
// resolved here, so an unknown one fails at compile time as in jinja2.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model_formats/jinja/ast.h"
#include "model_formats/jinja/lexer.h"

namespace zinf::formats::jinja {

// Fails with a located TemplateError for any syntax error or unsupported construct.
Body Parse(std::string_view source);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Body ParseTemplate();

 private:
  // Statements (parser.cpp).
  Body ParseBody(const std::vector<std::string>& end_tags, const char* block, std::string* found);
  StmtPtr ParseStatement();
  StmtPtr ParseIf(const Token& tag);
  StmtPtr ParseIfBody(StmtPtr stmt);
  StmtPtr ParseFor(const Token& tag);
  StmtPtr ParseSet(const Token& tag);
  StmtPtr ParseMacro(const Token& tag);
  StmtPtr ParseCallBlock(const Token& tag);
  StmtPtr ParseFilterBlock(const Token& tag);
  StmtPtr ParseWith(const Token& tag);
  std::vector<std::string> ParseTargets(const char* end_name);
  void ParseParams(std::vector<Param>* params);
  void ExpectBlockEnd();

  // Expressions (parse_expr.cpp).
  ExprPtr ParseTuple(bool with_condexpr, const char* end_name = nullptr);
  ExprPtr ParseExpression(bool with_condexpr = true);
  ExprPtr ParseOr();
  ExprPtr ParseAnd();
  ExprPtr ParseNot();
  ExprPtr ParseCompare();
  ExprPtr ParseMath1();
  ExprPtr ParseConcat();
  ExprPtr ParseMath2();
  ExprPtr ParsePow();
  ExprPtr ParseUnary(bool with_filter);
  ExprPtr ParsePrimary();
  ExprPtr ParsePostfix(ExprPtr node);
  ExprPtr ParseFilterExpr(ExprPtr node);
  ExprPtr ParseSubscript(ExprPtr node);
  ExprPtr ParseSubscribed();
  ExprPtr ParseFilter(ExprPtr node);
  ExprPtr ParseTest(ExprPtr node);
  void ParseCallArgs(Expr* call);
  ExprPtr MakeNode(ExprKind kind, const Token& at);
  ExprPtr MakeNode(ExprKind kind, const Expr& at);  // placed where `at` starts

  // Tokens.
  const Token& Current() const { return tokens_[pos_]; }
  const Token& Peek(size_t ahead = 1) const;
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool IsOp(std::string_view op) const;
  bool IsName(std::string_view name) const;
  bool SkipOp(std::string_view op);
  bool SkipName(std::string_view name);
  const Token& ExpectOp(std::string_view op);
  const Token& ExpectName();
  [[noreturn]] void Fail(const Token& at, const std::string& message) const;
  static std::string Describe(const Token& token);

  // Bounds the recursion of nested expressions and blocks.
  class DepthGuard {
   public:
    DepthGuard(Parser& parser);
    ~DepthGuard() { --parser_.depth_; }

   private:
    Parser& parser_;
  };

  // A loop that wraps the node built so far in a new one (a + b + c, a.b.c, a|f|g) deepens the
  // tree without recursing; each step counts as a level of nesting all the same.
  class ChainGuard {
   public:
    explicit ChainGuard(Parser& parser) : parser_(parser) {}
    ~ChainGuard() { parser_.depth_ -= steps_; }
    void Step();

   private:
    Parser& parser_;
    int steps_ = 0;
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<std::set<std::string>*> name_sinks_;  // names read inside the macros being parsed
  // Unknown filters and tests. jinja2 reports them at compile time, except inside an if
  // statement or an inline if of the same frame (loop, macro and block bodies are new frames),
  // where it fails only when the node runs.
  struct Unknown {
    const Expr* node;
    bool soft;
  };
  std::vector<Unknown> unknown_;
  bool soft_ = false;
  // Runs `parse` with soft_ set to `soft`, restoring it after.
  template <typename Fn>
  auto WithSoft(bool soft, Fn&& parse) {
    const bool saved = soft_;
    soft_ = soft;
    struct Restore {
      bool& flag;
      bool value;
      ~Restore() { flag = value; }
    } restore{soft_, saved};
    return parse();
  }
};

}  // namespace zinf::formats::jinja
