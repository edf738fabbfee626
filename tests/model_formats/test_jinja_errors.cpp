// The Jinja engine's failures: every error names the template, line and column; unknown filters,
// tests and tags fail when compiled; unsupported constructs are refused rather than rendered
// wrongly; the sandbox bounds output, loop work, call depth and nesting.
#include <catch2/catch.hpp>
#include <string>

#include "engine/error.h"
#include "model_formats/chat_template.h"
#include "model_formats/jinja/template.h"

namespace zinf::formats {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

// The error of compiling and rendering `source` with `messages` (JSON), or "" when none.
std::string ErrorOf(const std::string& source, const std::string& messages = "[]",
                    const ChatRenderLimits& limits = {}) {
  try {
    const ChatTemplate chat(source, "tmpl", nlohmann::ordered_json::object());
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(messages);
    chat.Render(inputs, limits);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string Repeat(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

}  // namespace

TEST_CASE("jinja compile errors name the line and column", "[jinja]") {
  CHECK(ErrorOf("line one\n{{ 1 + }}") == "tmpl:2:8: unexpected 'end of print statement'");
  CHECK(ErrorOf("a\n  {{ x|foo }}") == "tmpl:2:8: No filter named 'foo'.");
  CHECK(ErrorOf("{{ x is foo }}") == "tmpl:1:9: No test named 'foo'.");
  CHECK(ErrorOf("\n\n{% foo %}") == "tmpl:3:4: Encountered unknown tag 'foo'.");
  CHECK_THAT(ErrorOf("{% for x in y %}{% endif %}"),
             StartsWith("tmpl:1:20: Encountered unknown tag 'endif'. Jinja was looking for the "
                        "following tags: 'endfor' or 'else'."));
  CHECK_THAT(ErrorOf("{% if x %}"), Contains("Unexpected end of template"));
  CHECK_THAT(ErrorOf("{{ 'abc }}"), StartsWith("tmpl:1:4: unexpected char"));
  CHECK_THAT(ErrorOf("{# open"), StartsWith("tmpl:1:1: Missing end of comment tag"));
  CHECK_THAT(ErrorOf("{{ x"), StartsWith("tmpl:1:1: unexpected end of template"));
  CHECK_THAT(ErrorOf("{{ (1 ]"), Contains("unexpected ']'"));
  CHECK_THAT(ErrorOf("{% break %}"), Contains("'break' outside of a loop"));
}

TEST_CASE("jinja refuses what it does not support, with the place", "[jinja]") {
  CHECK(ErrorOf("{% include 'x' %}") ==
        "tmpl:1:4: the 'include' tag is not supported in chat templates");
  CHECK(ErrorOf("{% extends 'x' %}") ==
        "tmpl:1:4: the 'extends' tag is not supported in chat templates");
  CHECK(ErrorOf("{% for x in y recursive %}{% endfor %}") ==
        "tmpl:1:15: recursive for-loops are not supported");
  CHECK(ErrorOf("{{ f(*args) }}") == "tmpl:1:6: *args and **kwargs in calls are not supported");
  CHECK(ErrorOf("{{ 'x'.encode() }}") ==
        "tmpl:1:4: str.encode() is not supported in chat templates");
  CHECK(ErrorOf("{{ 9223372036854775807 + 1 }}") ==
        "tmpl:1:4: integer overflow (Python's unbounded integers are not supported)");
}

TEST_CASE("jinja runtime errors name the line", "[jinja]") {
  const std::string alternate = "{% for m in messages %}\n"
                                "{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}\n"
                                "  {{ raise_exception('Conversation roles must alternate "
                                "user/assistant/user/assistant/...') }}\n"
                                "{% endif %}{% endfor %}";
  CHECK(ErrorOf(alternate, R"([{"role": "user"}, {"role": "user"}])") ==
        "tmpl:3:6: Conversation roles must alternate user/assistant/user/assistant/...");
  CHECK(ErrorOf(alternate, R"([{"role": "user"}, {"role": "assistant"}])").empty());
  CHECK(ErrorOf("\n{{ x.y }}") == "tmpl:2:4: 'x' is undefined");
  CHECK(ErrorOf("{{ messages[0].a.b }}", "[{}]") == "tmpl:1:4: 'dict object' has no attribute 'a'");
  CHECK(ErrorOf("{{ 1 + 'a' }}") == "tmpl:1:4: unsupported operand type(s) for +: 'int' and 'str'");
  CHECK(ErrorOf("{{ messages|tojson }}", "[{\"a\": 1}]").empty());
  CHECK_THAT(ErrorOf("{{ x|tojson }}"),
             Contains("Object of type Undefined is not JSON serializable"));
  // Unknown filters inside an if are reported only when reached, as jinja2 does.
  CHECK(ErrorOf("{% if false %}{{ x|nope }}{% endif %}").empty());
  CHECK(ErrorOf("{% if true %}{{ x|nope }}{% endif %}") ==
        "tmpl:1:19: No filter named 'nope' found.");
}

TEST_CASE("jinja's sandbox is immutable", "[jinja]") {
  CHECK(ErrorOf("{{ messages.append(1) }}") ==
        "tmpl:1:4: access to attribute 'append' of 'list' object is unsafe.");
  CHECK(ErrorOf("{% set d = {} %}{{ d.update({'a': 1}) }}") ==
        "tmpl:1:20: access to attribute 'update' of 'dict' object is unsafe.");
  CHECK(ErrorOf("{{ messages.pop() }}") ==
        "tmpl:1:4: access to attribute 'pop' of 'list' object is unsafe.");
  CHECK(ErrorOf("{% set x = 1 %}{{ x.__class__ }}{{ ''.__class__.__mro__ }}").empty() == false);
  CHECK(ErrorOf("{% set ns = namespace() %}{{ ns.__init__ }}{{ messages.append }}").empty());
}

TEST_CASE("jinja bounds the work and output of a rendering", "[jinja]") {
  ChatRenderLimits limits;
  limits.max_output_bytes = 1000;
  CHECK_THAT(ErrorOf("{% for i in range(2000) %}x{% endfor %}", "[]", limits),
             Contains("the output exceeds max_output_bytes (1000)"));
  CHECK_THAT(ErrorOf("{{ 'a' * 100000 }}", "[]", limits), Contains("exceeds max_output_bytes"));
  CHECK_THAT(ErrorOf("{% set ns = namespace(s='ab') %}{% for i in range(30) %}"
                     "{% set ns.s = ns.s + ns.s %}{% endfor %}",
                     "[]", limits),
             Contains("exceeds max_output_bytes"));
  limits = {};
  limits.max_loop_iterations = 10000;
  CHECK_THAT(ErrorOf("{% for i in range(100) %}{% for j in range(200) %}{% endfor %}{% endfor %}",
                     "[]", limits),
             Contains("max_loop_iterations (10000)"));
  CHECK_THAT(ErrorOf("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
             Contains("macro calls nested deeper than max_call_depth (64)"));
  CHECK_THAT(ErrorOf("{{ range(1000000)|length }}"), Contains("Range too big"));
}

TEST_CASE("jinja bounds nesting instead of overflowing the stack", "[jinja]") {
  CHECK_THAT(ErrorOf("{{ " + Repeat("(", 100000) + "1" + Repeat(")", 100000) + " }}"),
             Contains("template nesting too deep"));
  CHECK_THAT(ErrorOf("{{ " + Repeat("[", 100000) + " }}"), StartsWith("tmpl:1:"));
  CHECK_THAT(ErrorOf("{{ " + Repeat("not ", 100000) + "1 }}"), Contains("nesting too deep"));
  CHECK_THAT(ErrorOf("{{ " + Repeat("-", 100000) + "1 }}"), Contains("nesting too deep"));
  CHECK_THAT(ErrorOf("{{ x" + Repeat(".a", 100000) + " }}"), Contains("nesting too deep"));
  CHECK_THAT(ErrorOf("{{ 1" + Repeat(" + 1", 100000) + " }}"), Contains("nesting too deep"));
  CHECK_THAT(ErrorOf("{{ x" + Repeat("|trim", 100000) + " }}"), Contains("nesting too deep"));
  CHECK_THAT(ErrorOf(Repeat("{% if 1 %}", 100000)), Contains("nesting too deep"));
  // Values: deep input JSON, a list nested by a loop, a namespace holding itself.
  CHECK_THAT(ErrorOf("{{ messages }}", Repeat("[", 5000) + Repeat("]", 5000)),
             Contains("value nesting too deep"));
  CHECK_THAT(ErrorOf("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}"
                     "{% set ns.x = [ns.x] %}{% endfor %}"),
             Contains("value nesting too deep"));
  CHECK_THAT(ErrorOf("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"),
             Contains("value nesting too deep"));
  CHECK(ErrorOf("{{ " + Repeat("(", 40) + "1" + Repeat(")", 40) + " }}").empty());
}

}  // namespace zinf::formats
