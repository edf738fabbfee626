// Expression parsing, following jinja2's Parser (parse_tuple ... parse_primary) so that
// precedence and associativity match: tests and filters bind tighter than arithmetic, ** is
// left-associative, `a if c` without else yields undefined.
#include "model_formats/jinja/builtins.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/parser.h"

namespace zinf::formats::jinja {

ExprPtr Parser::MakeNode(ExprKind kind, const Token& at) {
  auto node = std::make_unique<Expr>();
  node->kind = kind;
  node->line = at.line;
  node->col = at.col;
  return node;
}

ExprPtr Parser::MakeNode(ExprKind kind, const Expr& at) {
  auto node = std::make_unique<Expr>();
  node->kind = kind;
  node->line = at.line;
  node->col = at.col;
  return node;
}

ExprPtr Parser::ParseTuple(bool with_condexpr, const char* end_name) {
  const Token start = Current();
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) ExpectOp(",");
    const Token& t = Current();
    if (t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd || IsOp(")") ||
        (end_name && IsName(end_name))) {
      break;
    }
    items.push_back(ParseExpression(with_condexpr));
    if (IsOp(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!(start.type == TokenType::kOperator && start.text == ")")) {
      Fail(Current(), "Expected an expression, got '" + Describe(Current()) + "'");
    }
  }
  ExprPtr node = MakeNode(ExprKind::kTuple, start);
  node->args = std::move(items);
  return node;
}

ExprPtr Parser::ParseExpression(bool with_condexpr) {
  DepthGuard guard(*this);
  if (!with_condexpr) return ParseOr();
  const size_t mark = unknown_.size();
  ExprPtr expr = ParseOr();
  ChainGuard chain(*this);
  while (IsName("if")) {
    chain.Step();
    const Token& at = Next();
    for (size_t i = mark; i < unknown_.size(); ++i) unknown_[i].soft = true;
    ExprPtr node = MakeNode(ExprKind::kCond, at);
    node->line = expr->line;
    node->col = expr->col;
    ExprPtr cond = WithSoft(true, [&] { return ParseOr(); });
    ExprPtr otherwise =
        SkipName("else") ? WithSoft(true, [&] { return ParseExpression(true); }) : nullptr;
    node->args.push_back(std::move(cond));
    node->args.push_back(std::move(expr));
    node->args.push_back(std::move(otherwise));
    expr = std::move(node);
  }
  return expr;
}

namespace {
// Nodes built around an operand start where it starts: errors point at the whole expression.
ExprPtr Binary(ExprPtr node, ExprPtr left, ExprPtr right, std::string op) {
  node->name = std::move(op);
  node->line = left->line;
  node->col = left->col;
  node->args.push_back(std::move(left));
  node->args.push_back(std::move(right));
  return node;
}
}  // namespace

ExprPtr Parser::ParseOr() {
  ExprPtr left = ParseAnd();
  ChainGuard chain(*this);
  while (IsName("or")) {
    chain.Step();
    const Token& at = Next();
    left = Binary(MakeNode(ExprKind::kBinary, at), std::move(left), ParseAnd(), "or");
  }
  return left;
}

ExprPtr Parser::ParseAnd() {
  ExprPtr left = ParseNot();
  ChainGuard chain(*this);
  while (IsName("and")) {
    chain.Step();
    const Token& at = Next();
    left = Binary(MakeNode(ExprKind::kBinary, at), std::move(left), ParseNot(), "and");
  }
  return left;
}

ExprPtr Parser::ParseNot() {
  if (IsName("not")) {
    DepthGuard guard(*this);
    ExprPtr node = MakeNode(ExprKind::kUnary, Next());
    node->name = "not";
    node->args.push_back(ParseNot());
    return node;
  }
  return ParseCompare();
}

ExprPtr Parser::ParseCompare() {
  const Token start = Current();
  ExprPtr first = ParseMath1();
  ExprPtr node;
  ChainGuard chain(*this);
  while (true) {
    chain.Step();
    std::string op;
    const Token& t = Current();
    if (t.type == TokenType::kOperator && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                           t.text == "<=" || t.text == ">" || t.text == ">=")) {
      op = t.text;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && Peek().type == TokenType::kName && Peek().text == "in") {
      op = "notin";
      Next();
      Next();
    } else {
      break;
    }
    if (!node) {
      node = MakeNode(ExprKind::kCompare, start);
      node->args.push_back(std::move(first));
    }
    node->ops.push_back(op);
    node->args.push_back(ParseMath1());
  }
  return node ? std::move(node) : std::move(first);
}

ExprPtr Parser::ParseMath1() {
  ExprPtr left = ParseConcat();
  ChainGuard chain(*this);
  while (IsOp("+") || IsOp("-")) {
    chain.Step();
    const Token& at = Next();
    left = Binary(MakeNode(ExprKind::kBinary, at), std::move(left), ParseConcat(), at.text);
  }
  return left;
}

ExprPtr Parser::ParseConcat() {
  ExprPtr left = ParseMath2();
  ChainGuard chain(*this);
  while (IsOp("~")) {
    chain.Step();
    const Token& at = Next();
    left = Binary(MakeNode(ExprKind::kBinary, at), std::move(left), ParseMath2(), "~");
  }
  return left;
}

ExprPtr Parser::ParseMath2() {
  ExprPtr left = ParsePow();
  ChainGuard chain(*this);
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    chain.Step();
    const Token& at = Next();
    left = Binary(MakeNode(ExprKind::kBinary, at), std::move(left), ParsePow(), at.text);
  }
  return left;
}

ExprPtr Parser::ParsePow() {
  ExprPtr left = ParseUnary(true);
  ChainGuard chain(*this);
  while (IsOp("**")) {
    chain.Step();
    const Token& at = Next();
    left = Binary(MakeNode(ExprKind::kBinary, at), std::move(left), ParseUnary(true), "**");
  }
  return left;
}

ExprPtr Parser::ParseUnary(bool with_filter) {
  DepthGuard guard(*this);
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    node = MakeNode(ExprKind::kUnary, Current());
    node->name = Next().text;
    node->args.push_back(ParseUnary(false));
  } else {
    node = ParsePrimary();
  }
  node = ParsePostfix(std::move(node));
  if (with_filter) node = ParseFilterExpr(std::move(node));
  return node;
}

ExprPtr Parser::ParsePrimary() {
  const Token& t = Current();
  ExprPtr node;
  if (t.type == TokenType::kName) {
    node = MakeNode(ExprKind::kLiteral, t);
    if (t.text == "true" || t.text == "True") {
      node->value = Value(true);
    } else if (t.text == "false" || t.text == "False") {
      node->value = Value(false);
    } else if (t.text == "none" || t.text == "None") {
      node->value = Value::None();
    } else {
      node->kind = ExprKind::kName;
      node->name = t.text;
      for (auto* sink : name_sinks_) sink->insert(t.text);
    }
    Next();
  } else if (t.type == TokenType::kString) {
    node = MakeNode(ExprKind::kLiteral, t);
    std::string text;
    while (Current().type == TokenType::kString) text += Next().text;
    node->value = Value(std::move(text));
  } else if (t.type == TokenType::kInteger) {
    node = MakeNode(ExprKind::kLiteral, t);
    node->value = Value(t.integer);
    Next();
  } else if (t.type == TokenType::kFloat) {
    node = MakeNode(ExprKind::kLiteral, t);
    node->value = Value(t.number);
    Next();
  } else if (IsOp("(")) {
    Next();
    node = ParseTuple(true);
    ExpectOp(")");
  } else if (IsOp("[")) {
    node = MakeNode(ExprKind::kList, Next());
    while (!IsOp("]")) {
      if (!node->args.empty()) ExpectOp(",");
      if (IsOp("]")) break;
      node->args.push_back(ParseExpression());
    }
    ExpectOp("]");
  } else if (IsOp("{")) {
    node = MakeNode(ExprKind::kDict, Next());
    while (!IsOp("}")) {
      if (!node->args.empty()) ExpectOp(",");
      if (IsOp("}")) break;
      node->args.push_back(ParseExpression());
      ExpectOp(":");
      node->args.push_back(ParseExpression());
    }
    ExpectOp("}");
  } else {
    Fail(t, "unexpected '" + Describe(t) + "'");
  }
  return node;
}

ExprPtr Parser::ParsePostfix(ExprPtr node) {
  ChainGuard chain(*this);
  while (true) {
    chain.Step();
    if (IsOp(".") || IsOp("[")) {
      node = ParseSubscript(std::move(node));
    } else if (IsOp("(")) {
      ExprPtr call = MakeNode(ExprKind::kCall, Current());
      call->line = node->line;
      call->col = node->col;
      call->args.push_back(std::move(node));
      ParseCallArgs(call.get());
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseFilterExpr(ExprPtr node) {
  ChainGuard chain(*this);
  while (true) {
    chain.Step();
    if (IsOp("|")) {
      node = ParseFilter(std::move(node));
    } else if (IsName("is")) {
      node = ParseTest(std::move(node));
    } else if (IsOp("(")) {
      ExprPtr call = MakeNode(ExprKind::kCall, Current());
      call->line = node->line;
      call->col = node->col;
      call->args.push_back(std::move(node));
      ParseCallArgs(call.get());
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseSubscript(ExprPtr node) {
  const Token& at = Next();
  if (at.text == ".") {
    const Token& attr = Next();
    if (attr.type == TokenType::kName) {
      ExprPtr get = MakeNode(ExprKind::kGetAttr, *node);
      get->name = attr.text;
      get->args.push_back(std::move(node));
      return get;
    }
    if (attr.type != TokenType::kInteger) Fail(attr, "expected name or number");
    ExprPtr get = MakeNode(ExprKind::kGetItem, *node);
    get->args.push_back(std::move(node));
    ExprPtr index = MakeNode(ExprKind::kLiteral, attr);
    index->value = Value(attr.integer);
    get->args.push_back(std::move(index));
    return get;
  }
  std::vector<ExprPtr> subscripts;
  while (!IsOp("]")) {
    if (!subscripts.empty()) ExpectOp(",");
    subscripts.push_back(ParseSubscribed());
  }
  ExpectOp("]");
  if (subscripts.size() != 1) Fail(at, "tuple subscripts are not supported");
  ExprPtr sub = std::move(subscripts[0]);
  if (sub->kind == ExprKind::kSlice && sub->args.size() == 4 && !sub->args[0]) {
    sub->line = node->line;
    sub->col = node->col;
    sub->args[0] = std::move(node);
    return sub;
  }
  ExprPtr get = MakeNode(ExprKind::kGetItem, *node);
  get->args.push_back(std::move(node));
  get->args.push_back(std::move(sub));
  return get;
}

// One subscript: an expression, or a slice (returned with a null args[0] for the target).
ExprPtr Parser::ParseSubscribed() {
  ExprPtr slice = MakeNode(ExprKind::kSlice, Current());
  slice->args.push_back(nullptr);
  if (IsOp(":")) {
    Next();
    slice->args.push_back(nullptr);
  } else {
    ExprPtr start = ParseExpression();
    if (!IsOp(":")) return start;
    Next();
    slice->args.push_back(std::move(start));
  }
  if (IsOp(":") || IsOp("]") || IsOp(",")) {
    slice->args.push_back(nullptr);
  } else {
    slice->args.push_back(ParseExpression());
  }
  if (SkipOp(":")) {
    slice->args.push_back(IsOp("]") || IsOp(",") ? nullptr : ParseExpression());
  } else {
    slice->args.push_back(nullptr);
  }
  return slice;
}

void Parser::ParseCallArgs(Expr* call) {
  ExpectOp("(");
  bool require_comma = false;
  while (!IsOp(")")) {
    if (require_comma) {
      ExpectOp(",");
      if (IsOp(")")) break;
    }
    if (IsOp("*") || IsOp("**")) Fail(Current(), "*args and **kwargs in calls are not supported");
    if (Current().type == TokenType::kName && Peek().type == TokenType::kOperator &&
        Peek().text == "=") {
      std::string key = Next().text;
      Next();
      call->kwargs.emplace_back(std::move(key), ParseExpression());
    } else {
      if (!call->kwargs.empty())
        Fail(Current(), "Invalid argument syntax (positional argument after keyword)");
      call->args.push_back(ParseExpression());
    }
    require_comma = true;
  }
  ExpectOp(")");
}

ExprPtr Parser::ParseFilter(ExprPtr node) {
  ChainGuard chain(*this);
  while (SkipOp("|")) {
    chain.Step();
    const Token& name_token = ExpectName();
    ExprPtr filter = MakeNode(ExprKind::kFilter, name_token);
    filter->name = name_token.text;
    if (IsOp(".")) Fail(Current(), "dotted filter names are not supported");
    filter->filter = FindFilter(filter->name);
    if (!filter->filter) unknown_.push_back({filter.get(), soft_});
    filter->args.push_back(std::move(node));
    if (IsOp("(")) ParseCallArgs(filter.get());
    node = std::move(filter);
  }
  return node;
}

ExprPtr Parser::ParseTest(ExprPtr node) {
  const Token& is = Next();
  ExprPtr test = MakeNode(ExprKind::kTest, is);
  test->negated = SkipName("not");
  const Token& name_token = ExpectName();
  test->line = name_token.line;
  test->col = name_token.col;
  test->name = name_token.text;
  test->test = FindTest(test->name);
  if (!test->test) unknown_.push_back({test.get(), soft_});
  test->args.push_back(std::move(node));
  const Token& t = Current();
  if (IsOp("(")) {
    ParseCallArgs(test.get());
  } else if ((t.type == TokenType::kName || t.type == TokenType::kString ||
              t.type == TokenType::kInteger || t.type == TokenType::kFloat || IsOp("(") ||
              IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) Fail(t, "You cannot chain multiple tests with is");
    test->args.push_back(ParsePostfix(ParsePrimary()));
  }
  return test;
}

}  // namespace zinf::formats::jinja
