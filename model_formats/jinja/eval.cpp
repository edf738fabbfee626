// Expression evaluation: names, literals, attribute and item access, calls, filters, tests,
// operators with Python's short-circuit and chained-comparison rules.
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/interpreter.h"
#include "model_formats/jinja/python_str.h"

namespace zinf::formats::jinja {
void FailUndefined(const Value& undefined) { throw TemplateError(undefined.AsString()); }

Interpreter::DepthScope::DepthScope(Interpreter& interpreter) : interpreter_(interpreter) {
  if (++interpreter_.eval_depth_ > kMaxEvalDepth) {
    --interpreter_.eval_depth_;
    Throw("evaluation nested too deeply (over {} levels of statements, expressions and calls)",
          kMaxEvalDepth);
  }
}

Value Interpreter::Eval(const Expr& expr) {
  try {
    const DepthScope depth(*this);
    return EvalInner(expr);
  } catch (TemplateError& error) {
    error.Locate(expr.line, expr.col);
    throw;
  }
}

Value Interpreter::EvalInner(const Expr& expr) {
  switch (expr.kind) {
    case ExprKind::kLiteral: return expr.value;
    case ExprKind::kName: {
      const Value* value = scope_->Find(expr.name);
      if (value) return *value;
      return Value::Undefined("'" + expr.name + "' is undefined");
    }
    case ExprKind::kGetAttr: {
      const Value object = Eval(*expr.args[0]);
      return GetAttr(object, expr.name);
    }
    case ExprKind::kGetItem: {
      const Value object = Eval(*expr.args[0]);
      return GetItem(object, Eval(*expr.args[1]));
    }
    case ExprKind::kSlice: return EvalSlice(expr);
    case ExprKind::kCall: return EvalCall(expr);
    case ExprKind::kFilter: return EvalFilter(expr);
    case ExprKind::kTest: {
      const Value target = Eval(*expr.args[0]);
      CallArgs args;
      EvalArgs(expr, 1, &args);
      if (!expr.test) Throw("No test named '{}' found.", expr.name);
      const bool result = expr.test(*this, target, args);
      return Value(expr.negated ? !result : result);
    }
    case ExprKind::kUnary: {
      const Value operand = Eval(*expr.args[0]);
      if (expr.name == "not") return Value(!operand.Truthy());
      if (operand.IsUndefined()) FailUndefined(operand);
      if (operand.IsFloat())
        return Value(expr.name == "-" ? -operand.AsDouble() : operand.AsDouble());
      if (operand.IsInt() || operand.IsBool()) {
        return Value(expr.name == "-" ? -operand.AsInt() : operand.AsInt());
      }
      Throw("bad operand type for unary {}: '{}'", expr.name, operand.TypeName());
    }
    case ExprKind::kBinary: {
      Value left = Eval(*expr.args[0]);
      if (expr.name == "and") return left.Truthy() ? Eval(*expr.args[1]) : left;
      if (expr.name == "or") return left.Truthy() ? left : Eval(*expr.args[1]);
      const Value right = Eval(*expr.args[1]);
      return BinaryOp(*this, expr.name, left, right);
    }
    case ExprKind::kCompare: return EvalCompare(expr);
    case ExprKind::kCond:
      if (Eval(*expr.args[0]).Truthy()) return Eval(*expr.args[1]);
      if (expr.args[2]) return Eval(*expr.args[2]);
      return Value::Undefined("the inline if-expression on line " + std::to_string(expr.line) +
                              " evaluated to false and no else section was defined.");
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict: return EvalContainer(expr);
  }
  Throw("unsupported expression");
}

Value Interpreter::EvalCompare(const Expr& expr) {
  Value left = Eval(*expr.args[0]);
  for (size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = Eval(*expr.args[i + 1]);
    const std::string& op = expr.ops[i];
    bool result;
    if (op == "==") {
      result = Equal(left, right);
    } else if (op == "!=") {
      result = !Equal(left, right);
    } else if (op == "in" || op == "notin") {
      result = BinaryOp(*this, "in", left, right).AsBool();
      if (op == "notin") result = !result;
    } else {
      if (left.IsUndefined()) FailUndefined(left);
      if (right.IsUndefined()) FailUndefined(right);
      int c;
      try {
        c = Compare(left, right);
      } catch (const TemplateError&) {
        Throw("'{}' not supported between instances of '{}' and '{}'", op, left.TypeName(),
              right.TypeName());
      }
      result = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!result) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

void Interpreter::EvalArgs(const Expr& expr, size_t first, CallArgs* args) {
  for (size_t i = first; i < expr.args.size(); ++i) args->positional.push_back(Eval(*expr.args[i]));
  for (const auto& [key, value] : expr.kwargs) args->keyword.emplace_back(key, Eval(*value));
}

Value Interpreter::EvalCall(const Expr& expr) {
  const Value callee = Eval(*expr.args[0]);
  CallArgs args;
  EvalArgs(expr, 1, &args);
  return Call(callee, args);
}

Value Interpreter::Call(const Value& callee, CallArgs& args) {
  if (callee.kind() == Kind::kFunction) return callee.AsFunction().Call(*this, args);
  if (callee.IsUndefined()) FailUndefined(callee);
  Throw("'{}' object is not callable", callee.TypeName());
}

Value Interpreter::EvalFilter(const Expr& expr) {
  const Value target = Eval(*expr.args[0]);
  CallArgs args;
  EvalArgs(expr, 1, &args);
  if (!expr.filter) Throw("No filter named '{}' found.", expr.name);
  return expr.filter(*this, target, args);
}

Value Interpreter::EvalSlice(const Expr& expr) {
  const Value target = Eval(*expr.args[0]);
  Value parts[3];
  for (int i = 0; i < 3; ++i) {
    parts[i] = expr.args[i + 1] ? Eval(*expr.args[i + 1]) : Value::None();
  }
  if (target.IsUndefined()) FailUndefined(target);
  return SliceValue(target, parts[0], parts[1], parts[2]);
}

Value Interpreter::EvalContainer(const Expr& expr) {
  if (expr.kind == ExprKind::kDict) {
    auto dict = std::make_shared<Dict>();
    int depth = 0;
    for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
      const Value key = Eval(*expr.args[i]);
      Value value = Eval(*expr.args[i + 1]);
      depth = std::max(depth, value.Depth());
      dict->Set(DictKey(key), std::move(value));
    }
    if (depth + 1 > kMaxValueDepth)
      Throw("value nesting too deep (over {} levels)", kMaxValueDepth);
    dict->depth = depth + 1;
    return Value(std::move(dict));
  }
  std::vector<Value> items;
  items.reserve(expr.args.size());
  for (const ExprPtr& item : expr.args) items.push_back(Eval(*item));
  return Value::MakeList(std::move(items), expr.kind == ExprKind::kTuple);
}

}  // namespace zinf::formats::jinja
