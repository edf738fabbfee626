// Template: compile and render, turning the engine's errors into located zinf::Errors.
#include "model_formats/jinja/template.h"

#include "engine/error.h"
#include "model_formats/jinja/error.h"
#include "model_formats/jinja/parser.h"

namespace zinf::formats::jinja {
namespace {

[[noreturn]] void Report(const std::string& name, const TemplateError& error) {
  if (error.located()) Fail("{}:{}:{}: {}", name, error.line(), error.col(), error.message());
  Fail("{}: {}", name, error.message());
}

}  // namespace

Template::Template(std::string_view source, std::string name) : name_(std::move(name)) {
  try {
    body_ = Parse(source);
  } catch (const TemplateError& error) {
    Report(name_, error);
  }
}

std::string Template::Render(std::vector<std::pair<std::string, Value>> variables,
                             const RenderLimits& limits, std::optional<std::time_t> now) const {
  Interpreter interpreter(limits, now);
  try {
    return interpreter.Render(body_, std::move(variables));
  } catch (const TemplateError& error) {
    Report(name_, error);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const zinf::Error&) {
    throw;
  } catch (const std::exception& error) {
    Fail("{}: {}", name_, error.what());
  }
}

}  // namespace zinf::formats::jinja
