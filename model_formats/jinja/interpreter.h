// Renders a parsed template: walks statements, evaluates expressions with jinja2's semantics
// (scoping, Undefined, Python operators) and enforces the render limits. One Interpreter per
// rendering; it is not thread-safe, but any number may render one Body concurrently.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model_formats/jinja/ast.h"
#include "model_formats/jinja/value.h"

namespace zinf::formats::jinja {

struct RenderLimits {
  size_t max_output_bytes = 64u << 20;
  int max_call_depth = 64;
  int64_t max_loop_iterations = 1 << 24;
};

// Variables of one scope, chained to the enclosing scope.
struct Scope {
  explicit Scope(std::shared_ptr<Scope> parent_scope) : parent(std::move(parent_scope)) {}
  const Value* Find(std::string_view name) const;
  void Set(std::string name, Value value);
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;
};

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, std::optional<std::time_t> now);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with `variables` as the template's context.
  std::string Render(const Body& body, std::vector<std::pair<std::string, Value>> variables);

  Value Eval(const Expr& expr);
  Value Call(const Value& callee, CallArgs& args);
  // jinja2's environment.getattr / getitem (sandboxed): Undefined when missing.
  Value GetAttr(const Value& object, std::string_view name);
  Value GetItem(const Value& object, const Value& key);
  // Counts loop-like work against max_loop_iterations.
  void CountWork(int64_t iterations);
  // Fails when a string or list of `size` bytes/items would pass the output bound.
  void CheckSize(size_t size) const;
  std::optional<std::time_t> now() const { return now_; }
  // A namespace() made while rendering; its entries are cleared at the end (cycles leak else).
  void Track(std::shared_ptr<Dict> ns) { namespaces_.push_back(std::move(ns)); }

  // Macros and call blocks run their body through these.
  std::string CaptureBody(const Body& body, std::shared_ptr<Scope> scope);
  void EnterCall();
  void LeaveCall() { --call_depth_; }

 private:
  // Bounds the recursion of statements, expressions and macro calls together, so rendering stays
  // within about half a megabyte of stack (~500 bytes a level) whatever the template; real
  // templates nest well under 200.
  static constexpr int kMaxEvalDepth = 1000;
  class DepthScope {
   public:
    explicit DepthScope(Interpreter& interpreter);
    ~DepthScope() { --interpreter_.eval_depth_; }

   private:
    Interpreter& interpreter_;
  };

  enum class Flow { kNormal, kBreak, kContinue };
  Flow Exec(const Body& body);
  Flow ExecStmt(const Stmt& stmt);
  Flow ExecFor(const Stmt& stmt);
  bool RunLoop(const Stmt& stmt, std::vector<Value> items);  // whether an iteration completed
  void ExecSet(const Stmt& stmt);
  void ExecCallBlock(const Stmt& stmt);
  Value ApplyFilters(const std::vector<ExprPtr>& filters, Value value);
  void Append(std::string_view text);
  void Bind(Scope& scope, const std::vector<std::string>& targets, const Value& value);

  Value EvalInner(const Expr& expr);
  Value EvalCompare(const Expr& expr);
  Value EvalCall(const Expr& expr);
  Value EvalFilter(const Expr& expr);
  Value EvalSlice(const Expr& expr);
  Value EvalContainer(const Expr& expr);
  void EvalArgs(const Expr& expr, size_t first, CallArgs* args);

  RenderLimits limits_;
  std::optional<std::time_t> now_;
  std::shared_ptr<Scope> scope_;
  std::string* out_ = nullptr;
  int64_t work_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  std::vector<std::shared_ptr<Dict>> namespaces_;
  std::vector<std::pair<std::string, Value>> globals_;
  // Macros hold their defining scope, which holds them: the cycle is cut when rendering ends.
  std::vector<std::shared_ptr<struct MacroFunction>> macros_;
  friend struct MacroFunction;
};

// Python iteration: list items, dict keys, string characters; Undefined yields nothing.
std::vector<Value> Iterate(const Value& value);
// Python's len(); fails for values without one.
int64_t Length(const Value& value);
// Python slicing on strings (by code point) and lists.
Value SliceValue(const Value& value, const Value& start, const Value& stop, const Value& step);
// Fails with the message of an Undefined (jinja2's UndefinedError).
[[noreturn]] void FailUndefined(const Value& undefined);
// Binary operators with Python's semantics ("+", "-", "*", "/", "//", "%", "**", "~", "in").
Value BinaryOp(Interpreter& interpreter, std::string_view op, const Value& a, const Value& b);

}  // namespace zinf::formats::jinja
