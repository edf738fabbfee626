// The syntax tree the parser builds and the interpreter walks; nodes are plain data that keep
// their template line and column for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

enum class ExprKind : uint8_t {
  kLiteral,  // value
  kName,     // name
  kGetAttr,  // args[0].name
  kGetItem,  // args[0][args[1]]
  kSlice,    // args[0][args[1]:args[2]:args[3]], absent parts null
  kCall,     // args[0](args[1:], kwargs)
  kFilter,   // args[0] | name(args[1:], kwargs)
  kTest,     // args[0] is [not] name(args[1:], kwargs)
  kUnary,    // name ("-", "+", "not") args[0]
  kBinary,   // args[0] name args[1]: + - * / // % ** ~ and or
  kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
  kCond,     // args[1] if args[0] else args[2] (args[2] null: undefined)
  kList,     // [args...]
  kTuple,    // (args...)
  kDict,     // {args[0]: args[1], ...}
};

// Filters and tests: the value, then the call's arguments after it.
using FilterFn = Value (*)(Interpreter& interpreter, const Value& target, CallArgs& args);
using TestFn = bool (*)(Interpreter& interpreter, const Value& target, CallArgs& args);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line = 0;
  int col = 0;
  std::string name;
  Value value;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;       // kTest: `is not`
  FilterFn filter = nullptr;  // kFilter, resolved at parse time
  TestFn test = nullptr;      // kTest
};

enum class StmtKind : uint8_t {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // branches
  kFor,          // for targets in expr [if cond] body [else else_body]
  kSet,          // set targets = expr, or set targets[0].attr = expr (attr non-empty)
  kSetBlock,     // set targets[0] [| filters] body endset
  kMacro,        // macro name(params) body
  kCallBlock,    // call[(params)] expr body
  kFilterBlock,  // filter filters body
  kWith,         // with params body
  kBreak,
  kContinue,
  kScope,  // body run as is ({% generation %})
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Branch {
  ExprPtr cond;  // null: else
  Body body;
};

struct Param {
  std::string name;
  ExprPtr value;  // default, or the value for `with`; may be null
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  int col = 0;
  std::string text;  // kText; kMacro: the macro's name; kSet: attribute
  ExprPtr expr;      // kOutput, kFor (iterable), kSet, kCallBlock (the call)
  ExprPtr cond;      // kFor's filter
  std::vector<std::string> targets;
  std::vector<Branch> branches;
  Body body;
  Body else_body;
  std::vector<Param> params;
  std::vector<ExprPtr> filters;  // kSetBlock/kFilterBlock: kFilter nodes with a null args[0]
  bool uses_caller = false;      // kMacro
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

}  // namespace zinf::formats::jinja
