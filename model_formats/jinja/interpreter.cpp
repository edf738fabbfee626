// Statement execution: output, if, for (with loop variable, filter, else, break/continue), set,
// macros and call blocks, filter blocks, with; scoping as jinja2 compiles it (a scope per loop
// iteration, macro and with block; if does not scope).
#include "model_formats/jinja/interpreter.h"

#include "model_formats/jinja/error.h"
#include "model_formats/jinja/globals.h"
#include "model_formats/jinja/python_str.h"

namespace zinf::formats::jinja {

const Value* Scope::Find(std::string_view name) const {
  for (const Scope* scope = this; scope; scope = scope->parent.get()) {
    for (const auto& [key, value] : scope->vars) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Scope::Set(std::string name, Value value) {
  for (auto& [key, existing] : vars) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::move(name), std::move(value));
}

// A {% macro %}, or the body of a {% call %} block passed to the macro as `caller`.
struct MacroFunction : Function {
  MacroFunction(const Stmt& stmt, std::shared_ptr<Scope> scope, bool is_caller)
      : Function(is_caller ? "caller" : stmt.text), def(stmt), closure(std::move(scope)) {
    caller_body = is_caller;
  }

  std::string Describe() const override { return "<Macro '" + name + "'>"; }

  Value Call(Interpreter& interpreter, CallArgs& args) override {
    const auto& params = def.params;
    const bool varargs = !caller_body && def.uses_varargs;
    const bool kwargs = !caller_body && def.uses_kwargs;
    const bool caller = !caller_body && def.uses_caller;
    if (args.positional.size() > params.size() && !varargs) {
      Throw("macro '{}' takes not more than {} argument(s)", name, params.size());
    }
    auto scope = std::make_shared<Scope>(closure);
    std::vector<bool> given(params.size(), false);
    for (size_t i = 0; i < params.size() && i < args.positional.size(); ++i) {
      scope->Set(params[i].name, args.positional[i]);
      given[i] = true;
    }
    auto extra_kwargs = std::make_shared<Dict>();
    for (auto& [key, value] : args.keyword) {
      size_t i = 0;
      while (i < params.size() && params[i].name != key) ++i;
      if (i < params.size()) {
        if (given[i]) Throw("macro '{}' got multiple values for argument '{}'", name, key);
        scope->Set(key, value);
        given[i] = true;
      } else if (key == "caller" && caller) {
        scope->Set("caller", value);
      } else if (kwargs) {
        extra_kwargs->Set(key, value);
      } else {
        Throw("macro '{}' takes no keyword argument '{}'", name, key);
      }
    }
    interpreter.EnterCall();
    std::shared_ptr<Scope> saved = interpreter.scope_;
    interpreter.scope_ = scope;
    try {
      for (size_t i = 0; i < params.size(); ++i) {
        if (given[i]) continue;
        scope->Set(params[i].name,
                   params[i].value ? interpreter.Eval(*params[i].value)
                                   : Value::Undefined(fmt::format("parameter '{}' was not provided",
                                                                  params[i].name)));
      }
      if (varargs) {
        std::vector<Value> rest;
        for (size_t i = params.size(); i < args.positional.size(); ++i)
          rest.push_back(args.positional[i]);
        scope->Set("varargs", Value::MakeList(std::move(rest), true));
      }
      if (kwargs) scope->Set("kwargs", Value(extra_kwargs));
      if (caller && !scope->Find("caller"))
        scope->Set("caller", Value::Undefined("'caller' is undefined"));
    } catch (...) {
      interpreter.scope_ = saved;
      interpreter.LeaveCall();
      throw;
    }
    interpreter.scope_ = saved;
    std::string text;
    try {
      text = interpreter.CaptureBody(def.body, scope);
    } catch (...) {
      interpreter.LeaveCall();
      throw;
    }
    interpreter.LeaveCall();
    return Value(std::move(text));
  }

  const Stmt& def;
  std::shared_ptr<Scope> closure;
  bool caller_body = false;
};

Interpreter::Interpreter(const RenderLimits& limits, std::optional<std::time_t> now)
    : limits_(limits), now_(now) {}

Interpreter::~Interpreter() {
  for (auto& macro : macros_) macro->closure.reset();
  for (auto& ns : namespaces_) ns->entries.clear();
}

void Interpreter::CountWork(int64_t iterations) {
  work_ += iterations;
  if (work_ > limits_.max_loop_iterations) {
    Throw("the template exceeded max_loop_iterations ({})", limits_.max_loop_iterations);
  }
}

void Interpreter::CheckSize(size_t size) const {
  if (size > limits_.max_output_bytes) {
    Throw("a value of {} bytes or items exceeds max_output_bytes ({})", size,
          limits_.max_output_bytes);
  }
}

void Interpreter::EnterCall() {
  if (++call_depth_ > limits_.max_call_depth) {
    --call_depth_;
    Throw("macro calls nested deeper than max_call_depth ({})", limits_.max_call_depth);
  }
  CountWork(1);
}

void Interpreter::Append(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    Throw("the output exceeds max_output_bytes ({})", limits_.max_output_bytes);
  }
  out_->append(text);
}

std::string Interpreter::Render(const Body& body,
                                std::vector<std::pair<std::string, Value>> variables) {
  auto globals = std::make_shared<Scope>(nullptr);
  globals->vars = MakeGlobals();
  auto context = std::make_shared<Scope>(globals);
  context->vars = std::move(variables);
  scope_ = std::make_shared<Scope>(context);
  std::string out;
  out_ = &out;
  Exec(body);
  return out;
}

std::string Interpreter::CaptureBody(const Body& body, std::shared_ptr<Scope> scope) {
  std::string text;
  std::string* saved_out = out_;
  std::shared_ptr<Scope> saved_scope = std::move(scope_);
  out_ = &text;
  scope_ = std::move(scope);
  try {
    Exec(body);
  } catch (...) {
    out_ = saved_out;
    scope_ = std::move(saved_scope);
    throw;
  }
  out_ = saved_out;
  scope_ = std::move(saved_scope);
  return text;
}

Interpreter::Flow Interpreter::Exec(const Body& body) {
  for (const StmtPtr& stmt : body) {
    const Flow flow = ExecStmt(*stmt);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::ExecStmt(const Stmt& stmt) {
  try {
    const DepthScope depth(*this);
    switch (stmt.kind) {
      case StmtKind::kText: Append(stmt.text); return Flow::kNormal;
      case StmtKind::kOutput: {
        const Value value = Eval(*stmt.expr);
        if (value.IsString()) {
          Append(value.AsString());
        } else {
          Append(Str(value));
        }
        return Flow::kNormal;
      }
      case StmtKind::kIf:
        for (const Branch& branch : stmt.branches) {
          if (!branch.cond || Eval(*branch.cond).Truthy()) return Exec(branch.body);
        }
        return Flow::kNormal;
      case StmtKind::kFor: return ExecFor(stmt);
      case StmtKind::kSet: ExecSet(stmt); return Flow::kNormal;
      case StmtKind::kSetBlock: {
        Value text(CaptureBody(stmt.body, scope_));
        scope_->Set(stmt.targets[0], ApplyFilters(stmt.filters, std::move(text)));
        return Flow::kNormal;
      }
      case StmtKind::kMacro: {
        auto macro = std::make_shared<MacroFunction>(stmt, scope_, false);
        macros_.push_back(macro);
        scope_->Set(stmt.text, Value(std::shared_ptr<Function>(macro)));
        return Flow::kNormal;
      }
      case StmtKind::kCallBlock: ExecCallBlock(stmt); return Flow::kNormal;
      case StmtKind::kFilterBlock: {
        const Value value = ApplyFilters(stmt.filters, Value(CaptureBody(stmt.body, scope_)));
        Append(value.IsString() ? value.AsString() : Str(value));
        return Flow::kNormal;
      }
      case StmtKind::kWith: {
        auto scope = std::make_shared<Scope>(scope_);
        for (const Param& param : stmt.params) scope->Set(param.name, Eval(*param.value));
        std::shared_ptr<Scope> saved = scope_;
        scope_ = scope;
        Flow flow;
        try {
          flow = Exec(stmt.body);
        } catch (...) {
          scope_ = saved;
          throw;
        }
        scope_ = saved;
        return flow;
      }
      case StmtKind::kBreak: return Flow::kBreak;
      case StmtKind::kContinue: return Flow::kContinue;
      case StmtKind::kScope: return Exec(stmt.body);
    }
  } catch (TemplateError& error) {
    error.Locate(stmt.line, stmt.col);
    throw;
  }
  return Flow::kNormal;
}

void Interpreter::Bind(Scope& scope, const std::vector<std::string>& targets, const Value& value) {
  if (targets.size() == 1) {
    scope.Set(targets[0], value);
    return;
  }
  std::vector<Value> items;
  if (value.IsList() || value.IsString()) {
    items = Iterate(value);
  } else {
    Throw("cannot unpack non-iterable {} object", value.TypeName());
  }
  if (items.size() > targets.size())
    Throw("too many values to unpack (expected {})", targets.size());
  if (items.size() < targets.size()) {
    Throw("not enough values to unpack (expected {}, got {})", targets.size(), items.size());
  }
  for (size_t i = 0; i < targets.size(); ++i) scope.Set(targets[i], items[i]);
}

Interpreter::Flow Interpreter::ExecFor(const Stmt& stmt) {
  const Value iterable = Eval(*stmt.expr);
  std::vector<Value> items = Iterate(iterable);
  std::shared_ptr<Scope> outer = scope_;
  if (stmt.cond) {
    std::vector<Value> kept;
    for (Value& item : items) {
      CountWork(1);
      auto scope = std::make_shared<Scope>(outer);
      Bind(*scope, stmt.targets, item);
      scope_ = scope;
      bool keep = false;
      try {
        keep = Eval(*stmt.cond).Truthy();
      } catch (...) {
        scope_ = outer;
        throw;
      }
      if (keep) kept.push_back(std::move(item));
    }
    scope_ = outer;
    items = std::move(kept);
  }
  // jinja2 runs the else block when no iteration reached the end of its body (break and
  // continue skip the flag it clears there), not only when there were no items.
  bool completed = false;
  if (!items.empty()) completed = RunLoop(stmt, std::move(items));
  if (!completed && !stmt.else_body.empty()) {
    scope_ = std::make_shared<Scope>(outer);
    try {
      Exec(stmt.else_body);
    } catch (...) {
      scope_ = outer;
      throw;
    }
    scope_ = outer;
  }
  return Flow::kNormal;
}

bool Interpreter::RunLoop(const Stmt& stmt, std::vector<Value> items) {
  std::shared_ptr<Scope> outer = scope_;
  bool completed = false;
  auto loop = std::make_shared<LoopState>();
  loop->items = std::make_shared<List>();
  loop->items->items = std::move(items);
  const Value loop_value(loop);
  const size_t count = loop->items->items.size();
  try {
    for (size_t i = 0; i < count; ++i) {
      CountWork(1);
      loop->index0 = static_cast<int64_t>(i);
      scope_ = std::make_shared<Scope>(outer);
      Bind(*scope_, stmt.targets, loop->items->items[i]);
      scope_->Set("loop", loop_value);
      const Flow flow = Exec(stmt.body);
      if (flow == Flow::kBreak) break;
      if (flow == Flow::kNormal) completed = true;
    }
  } catch (...) {
    scope_ = outer;
    throw;
  }
  scope_ = outer;
  return completed;
}

void Interpreter::ExecSet(const Stmt& stmt) {
  Value value = Eval(*stmt.expr);
  if (stmt.text.empty()) {
    Bind(*scope_, stmt.targets, value);
    return;
  }
  const Value* target = scope_->Find(stmt.targets[0]);
  if (!target || target->kind() != Kind::kNamespace) {
    Throw("cannot assign attribute on non-namespace object");
  }
  Dict& ns = target->AsDict();
  if (value.Depth() + 1 > kMaxValueDepth)
    Throw("value nesting too deep (over {} levels)", kMaxValueDepth);
  ns.depth = std::max(ns.depth, value.Depth() + 1);
  ns.Set(stmt.text, std::move(value));
}

void Interpreter::ExecCallBlock(const Stmt& stmt) {
  const Expr& call = *stmt.expr;
  const Value callee = Eval(*call.args[0]);
  CallArgs args;
  EvalArgs(call, 1, &args);
  auto caller = std::make_shared<MacroFunction>(stmt, scope_, true);
  macros_.push_back(caller);
  args.keyword.emplace_back("caller", Value(std::shared_ptr<Function>(caller)));
  const Value result = Call(callee, args);
  Append(result.IsString() ? result.AsString() : Str(result));
}

Value Interpreter::ApplyFilters(const std::vector<ExprPtr>& filters, Value value) {
  for (const ExprPtr& filter : filters) {
    CallArgs args;
    EvalArgs(*filter, 1, &args);
    try {
      if (!filter->filter) Throw("No filter named '{}' found.", filter->name);
      value = filter->filter(*this, value, args);
    } catch (TemplateError& error) {
      error.Locate(filter->line, filter->col);
      throw;
    }
  }
  return value;
}

}  // namespace zinf::formats::jinja
