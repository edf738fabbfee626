// Statement parsing (if, for, set, macro, call, filter, with, loop controls, generation) and the
// token helpers the expression parser shares.
#include "model_formats/jinja/parser.h"

#include "model_formats/jinja/builtins.h"
#include "model_formats/jinja/error.h"

namespace zinf::formats::jinja {
namespace {

// Nesting beyond this is no real template; it keeps parsing and rendering recursion shallow.
constexpr int kMaxNesting = 256;

std::string QuoteList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'" + names[i] + "'";
  }
  return out;
}

}  // namespace

Body Parse(std::string_view source) { return Parser(Tokenize(source)).ParseTemplate(); }

Parser::DepthGuard::DepthGuard(Parser& parser) : parser_(parser) {
  if (++parser_.depth_ > kMaxNesting) {
    --parser_.depth_;
    parser_.Fail(parser_.Current(), "template nesting too deep (over 256 levels)");
  }
}

void Parser::ChainGuard::Step() {
  if (parser_.depth_ + 1 > kMaxNesting) {
    parser_.Fail(parser_.Current(), "template nesting too deep (over 256 levels)");
  }
  ++parser_.depth_;
  ++steps_;
}

const Token& Parser::Peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}
bool Parser::IsOp(std::string_view op) const {
  return Current().type == TokenType::kOperator && Current().text == op;
}
bool Parser::IsName(std::string_view name) const {
  return Current().type == TokenType::kName && Current().text == name;
}
bool Parser::SkipOp(std::string_view op) {
  if (!IsOp(op)) return false;
  Next();
  return true;
}
bool Parser::SkipName(std::string_view name) {
  if (!IsName(name)) return false;
  Next();
  return true;
}
const Token& Parser::ExpectOp(std::string_view op) {
  if (!IsOp(op)) {
    Fail(Current(), "expected token '" + std::string(op) + "', got '" + Describe(Current()) + "'");
  }
  return Next();
}
const Token& Parser::ExpectName() {
  if (Current().type != TokenType::kName) {
    Fail(Current(), "expected token 'name', got '" + Describe(Current()) + "'");
  }
  return Next();
}
void Parser::ExpectBlockEnd() {
  if (Current().type != TokenType::kBlockEnd) {
    Fail(Current(), "expected token 'end of statement block', got '" + Describe(Current()) + "'");
  }
  Next();
}

void Parser::Fail(const Token& at, const std::string& message) const {
  TemplateError error(message);
  error.Locate(at.line, at.col);
  throw error;
}

std::string Parser::Describe(const Token& token) {
  switch (token.type) {
    case TokenType::kName:
    case TokenType::kOperator: return token.text;
    case TokenType::kString: return "string";
    case TokenType::kInteger: return "integer";
    case TokenType::kFloat: return "float";
    case TokenType::kVariableEnd: return "end of print statement";
    case TokenType::kBlockEnd: return "end of statement block";
    case TokenType::kVariableBegin: return "begin of print statement";
    case TokenType::kBlockBegin: return "begin of statement block";
    case TokenType::kText: return "template data";
    case TokenType::kEnd: return "end of template";
  }
  return "?";
}

Body Parser::ParseTemplate() {
  Body body = ParseBody({}, nullptr, nullptr);
  for (const Unknown& unknown : unknown_) {
    if (unknown.soft) continue;
    const Expr& node = *unknown.node;
    TemplateError error(
        std::string(node.kind == ExprKind::kFilter ? "No filter named '" : "No test named '") +
        node.name + "'.");
    error.Locate(node.line, node.col);
    throw error;
  }
  return body;
}

// Statements up to one of `end_tags` (whose name token is consumed and stored in *found).
Body Parser::ParseBody(const std::vector<std::string>& end_tags, const char* block,
                       std::string* found) {
  DepthGuard guard(*this);
  Body body;
  while (true) {
    const Token& t = Current();
    if (t.type == TokenType::kEnd) {
      if (end_tags.empty()) return body;
      Fail(t, "Unexpected end of template. Jinja was looking for the following tags: " +
                  QuoteList(end_tags) + ". The innermost block that needs to be closed is '" +
                  block + "'.");
    }
    if (t.type == TokenType::kText) {
      auto stmt = std::make_unique<Stmt>();
      stmt->kind = StmtKind::kText;
      stmt->line = t.line;
      stmt->col = t.col;
      stmt->text = t.text;
      body.push_back(std::move(stmt));
      Next();
    } else if (t.type == TokenType::kVariableBegin) {
      Next();
      auto stmt = std::make_unique<Stmt>();
      stmt->kind = StmtKind::kOutput;
      stmt->line = t.line;
      stmt->col = t.col;
      stmt->expr = ParseTuple(true);
      if (Current().type != TokenType::kVariableEnd) {
        Fail(Current(),
             "expected token 'end of print statement', got '" + Describe(Current()) + "'");
      }
      Next();
      body.push_back(std::move(stmt));
    } else if (t.type == TokenType::kBlockBegin) {
      const Token& name = Peek();
      if (name.type == TokenType::kName) {
        for (const std::string& end : end_tags) {
          if (name.text == end) {
            Next();
            Next();
            *found = end;
            return body;
          }
        }
      }
      Next();
      if (name.type != TokenType::kName) Fail(name, "tag name expected");
      StmtPtr stmt = ParseStatement();
      if (!stmt) {
        std::string message = "Encountered unknown tag '" + name.text + "'.";
        if (!end_tags.empty()) {
          message += " Jinja was looking for the following tags: " + QuoteList(end_tags) +
                     ". The innermost block that needs to be closed is '" + block + "'.";
        }
        Fail(name, message);
      }
      body.push_back(std::move(stmt));
    } else {
      Fail(t, "unexpected '" + Describe(t) + "'");
    }
  }
}

// The statement whose tag name is the current token; null for an unknown tag.
StmtPtr Parser::ParseStatement() {
  const Token tag = Current();
  const std::string& name = tag.text;
  if (name == "if") return Next(), ParseIf(tag);
  if (name == "for") return Next(), ParseFor(tag);
  if (name == "set") return Next(), ParseSet(tag);
  if (name == "macro") return Next(), ParseMacro(tag);
  if (name == "call") return Next(), ParseCallBlock(tag);
  if (name == "filter") return Next(), ParseFilterBlock(tag);
  if (name == "with") return Next(), ParseWith(tag);
  auto stmt = std::make_unique<Stmt>();
  stmt->line = tag.line;
  stmt->col = tag.col;
  if (name == "break" || name == "continue") {
    Next();
    if (loop_depth_ == 0) Fail(tag, "'" + name + "' outside of a loop");
    stmt->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    ExpectBlockEnd();
    return stmt;
  }
  if (name == "generation") {
    Next();
    ExpectBlockEnd();
    stmt->kind = StmtKind::kScope;
    std::string found;
    stmt->body = ParseBody({"endgeneration"}, "generation", &found);
    ExpectBlockEnd();
    return stmt;
  }
  if (name == "include" || name == "import" || name == "from" || name == "extends" ||
      name == "block" || name == "autoescape" || name == "do" || name == "trans") {
    Fail(tag, "the '" + name + "' tag is not supported in chat templates");
  }
  return nullptr;
}

StmtPtr Parser::ParseIf(const Token& tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kIf;
  stmt->line = tag.line;
  stmt->col = tag.col;
  return WithSoft(true, [&] { return ParseIfBody(std::move(stmt)); });
}

StmtPtr Parser::ParseIfBody(StmtPtr stmt) {
  ExprPtr cond = ParseTuple(false);
  while (true) {
    ExpectBlockEnd();
    std::string found;
    Body body = ParseBody({"elif", "else", "endif"}, "if", &found);
    stmt->branches.push_back(Branch{std::move(cond), std::move(body)});
    if (found == "elif") {
      cond = ParseTuple(false);
      continue;
    }
    if (found == "else") {
      ExpectBlockEnd();
      Body else_body = ParseBody({"endif"}, "if", &found);
      stmt->branches.push_back(Branch{nullptr, std::move(else_body)});
    }
    ExpectBlockEnd();
    return stmt;
  }
}

// Assignment targets: a name, or names separated by commas (optionally parenthesized).
std::vector<std::string> Parser::ParseTargets(const char* end_name) {
  std::vector<std::string> names;
  const bool parens = SkipOp("(");
  while (true) {
    names.push_back(ExpectName().text);
    if (!SkipOp(",")) break;
    if ((end_name && IsName(end_name)) || IsOp(")") || IsOp("=")) break;
  }
  if (parens) ExpectOp(")");
  for (const std::string& name : names) {
    if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" ||
        name == "None") {
      Fail(Current(), "Can't assign to '" + name + "'");
    }
  }
  return names;
}

StmtPtr Parser::ParseFor(const Token& tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kFor;
  stmt->line = tag.line;
  stmt->col = tag.col;
  stmt->targets = ParseTargets("in");
  if (!SkipName("in")) Fail(Current(), "expected token 'in', got '" + Describe(Current()) + "'");
  stmt->expr = ParseTuple(false, "recursive");
  if (SkipName("if")) stmt->cond = ParseExpression();
  if (IsName("recursive")) Fail(Current(), "recursive for-loops are not supported");
  ExpectBlockEnd();
  std::string found;
  ++loop_depth_;
  stmt->body = WithSoft(false, [&] { return ParseBody({"endfor", "else"}, "for", &found); });
  --loop_depth_;
  if (found == "else") {
    ExpectBlockEnd();
    stmt->else_body = WithSoft(false, [&] { return ParseBody({"endfor"}, "for", &found); });
  }
  ExpectBlockEnd();
  return stmt;
}

StmtPtr Parser::ParseSet(const Token& tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->line = tag.line;
  stmt->col = tag.col;
  stmt->kind = StmtKind::kSet;
  if (Current().type == TokenType::kName && Peek().type == TokenType::kOperator &&
      Peek().text == ".") {
    stmt->targets.push_back(Next().text);
    Next();
    stmt->text = ExpectName().text;
  } else {
    stmt->targets = ParseTargets(nullptr);
  }
  if (SkipOp("=")) {
    stmt->expr = ParseTuple(true);
    ExpectBlockEnd();
    return stmt;
  }
  if (!stmt->text.empty() || stmt->targets.size() != 1) Fail(tag, "a block set assigns one name");
  stmt->kind = StmtKind::kSetBlock;
  if (IsOp("|")) {
    ExprPtr chain = ParseFilter(nullptr);
    // Unroll the chain innermost first, so the block applies them in written order.
    std::vector<ExprPtr> order;
    while (chain) {
      ExprPtr inner = std::move(chain->args[0]);
      order.insert(order.begin(), std::move(chain));
      chain = std::move(inner);
    }
    stmt->filters = std::move(order);
  }
  ExpectBlockEnd();
  std::string found;
  stmt->body = WithSoft(false, [&] { return ParseBody({"endset"}, "set", &found); });
  ExpectBlockEnd();
  return stmt;
}

void Parser::ParseParams(std::vector<Param>* params) {
  ExpectOp("(");
  while (!IsOp(")")) {
    if (!params->empty()) ExpectOp(",");
    Param param;
    param.name = ExpectName().text;
    if (SkipOp("=")) {
      param.value = ParseExpression();
    } else if (!params->empty() && params->back().value) {
      Fail(Current(), "non-default argument follows default argument");
    }
    params->push_back(std::move(param));
  }
  ExpectOp(")");
}

StmtPtr Parser::ParseMacro(const Token& tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kMacro;
  stmt->line = tag.line;
  stmt->col = tag.col;
  stmt->text = ExpectName().text;
  ParseParams(&stmt->params);
  ExpectBlockEnd();
  std::set<std::string> names;
  name_sinks_.push_back(&names);
  const int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  std::string found;
  stmt->body = WithSoft(false, [&] { return ParseBody({"endmacro"}, "macro", &found); });
  loop_depth_ = saved_loop_depth;
  name_sinks_.pop_back();
  if (IsName(stmt->text)) Next();
  ExpectBlockEnd();
  stmt->uses_caller = names.count("caller") > 0;
  stmt->uses_varargs = names.count("varargs") > 0;
  stmt->uses_kwargs = names.count("kwargs") > 0;
  return stmt;
}

StmtPtr Parser::ParseCallBlock(const Token& tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kCallBlock;
  stmt->line = tag.line;
  stmt->col = tag.col;
  if (IsOp("(")) ParseParams(&stmt->params);
  stmt->expr = ParseExpression();
  if (stmt->expr->kind != ExprKind::kCall) Fail(tag, "expected call");
  ExpectBlockEnd();
  std::set<std::string> names;
  name_sinks_.push_back(&names);
  std::string found;
  stmt->body = WithSoft(false, [&] { return ParseBody({"endcall"}, "call", &found); });
  name_sinks_.pop_back();
  ExpectBlockEnd();
  return stmt;
}

StmtPtr Parser::ParseFilterBlock(const Token& tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kFilterBlock;
  stmt->line = tag.line;
  stmt->col = tag.col;
  // The first filter's name follows the tag directly; parse it as if a '|' preceded it.
  tokens_[pos_ - 1] = Token{TokenType::kOperator, "|", 0, 0, tag.line, tag.col};
  --pos_;
  ExprPtr chain = ParseFilter(nullptr);
  while (chain) {
    ExprPtr inner = std::move(chain->args[0]);
    stmt->filters.insert(stmt->filters.begin(), std::move(chain));
    chain = std::move(inner);
  }
  ExpectBlockEnd();
  std::string found;
  stmt->body = WithSoft(false, [&] { return ParseBody({"endfilter"}, "filter", &found); });
  ExpectBlockEnd();
  return stmt;
}

StmtPtr Parser::ParseWith(const Token& tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::kWith;
  stmt->line = tag.line;
  stmt->col = tag.col;
  while (Current().type != TokenType::kBlockEnd) {
    if (!stmt->params.empty()) ExpectOp(",");
    Param param;
    param.name = ExpectName().text;
    ExpectOp("=");
    param.value = ParseExpression();
    stmt->params.push_back(std::move(param));
  }
  ExpectBlockEnd();
  std::string found;
  stmt->body = WithSoft(false, [&] { return ParseBody({"endwith"}, "with", &found); });
  ExpectBlockEnd();
  return stmt;
}

}  // namespace zinf::formats::jinja
