// The Jinja engine against jinja2: each template rendered with its context must give exactly what
// Python jinja2 3.1.6 gave, set up as transformers sets it up (the expected strings were made
// with it). Covers whitespace control, printing, operators, filters, tests, methods and scoping.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model_formats/jinja/python_json.h"
#include "model_formats/jinja/template.h"

namespace zinf::formats::jinja {
namespace {

struct Case {
  const char* source;
  const char* context;  // JSON object: the template's variables
  const char* expected;
};

// 2026-07-26 12:00 UTC, the date the expected strftime_now output shows.
constexpr std::time_t kNow = 1785067200;

std::string Render(const std::string& source, const std::string& context) {
  const Template tmpl(source, "case");
  std::vector<std::pair<std::string, Value>> variables;
  const auto json = nlohmann::ordered_json::parse(context);
  for (const auto& [key, value] : json.items()) {
    variables.emplace_back(key, FromJson(value));
  }
  return tmpl.Render(std::move(variables), RenderLimits{}, kNow);
}

// clang-format off
const Case kCases[] = {
    {R"j({{ 1 }}{{ 1.5 }}{{ "a" }}{{ none }}{{ true }}{{ [1, 'a', none, 1.0] }}{{ {'a': 1} }})j", R"j({})j", R"j(11.5aNoneTrue[1, 'a', None, 1.0]{'a': 1})j"},
    {R"j({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ 2**3**2 }})j", R"j({})j", R"j(3 -4 -2 3.5 2.0 0.5 3.0 64)j"},
    {R"j({% for x in [1,2,3] %}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.revindex }}{{ loop.length }}{% if not loop.last %},{% endif %}{% endfor %})j", R"j({})j", R"j(1TrueFalse33,2FalseFalse23,3FalseTrue13)j"},
    {R"j({% for x in [1,2,3] if x > 1 %}{{ loop.index }}:{{ x }}{% else %}none{% endfor %})j", R"j({})j", R"j(1:22:3)j"},
    {R"j({% for x in [] %}a{% else %}empty{% endfor %})j", R"j({})j", R"j(empty)j"},
    {R"j({% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %})j", R"j({})j", R"j(a=1;b=2;)j"},
    {R"j({% set ns = namespace(a=1) %}{% for x in [1,2] %}{% set ns.a = ns.a + x %}{% endfor %}{{ ns.a }})j", R"j({})j", R"j(4)j"},
    {R"j({% macro f(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ f(1) }}{{ f(1, b=3) }}{{ f(a=5) }})j", R"j({})j", R"j(1-21-35-2)j"},
    {R"j({{ "Hello World"|upper }}{{ "  x  "|trim }}{{ "abc"[::-1] }}{{ [1,2,3][1:] }}{{ "héllo"[1] }}{{ "héllo"|length }})j", R"j({})j", R"j(HELLO WORLDxcba[2, 3]é5)j"},
    {R"j({{ messages|selectattr("role", "equalto", "system")|list }})j", R"j({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]})j", R"j([{'role': 'system', 'content': 's'}])j"},
    {R"j({{ messages|map(attribute="role")|join(", ") }})j", R"j({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]})j", R"j(system, user)j"},
    {R"j({{ x|tojson }}|{{ x|tojson(indent=2) }}|{{ x|tojson(sort_keys=true) }})j", R"j({"x": {"b": [1, 2.5, "é\n\"", null, true], "a": {}}})j", R"j({"b": [1, 2.5, "é\n\"", null, true], "a": {}}|{
  "b": [
    1,
    2.5,
    "é\n\"",
    null,
    true
  ],
  "a": {}
}|{"a": {}, "b": [1, 2.5, "é\n\"", null, true]})j"},
    {R"j({{ "a,b,,c".split(",") }}{{ "  a  b ".split() }}{{ "a b c".split(" ", 1) }}{{ "abc".startswith(("x","a")) }})j", R"j({})j", R"j(['a', 'b', '', 'c']['a', 'b']['a', 'b c']True)j"},
    {R"j({{ 0.1 + 0.2 }}{{ 1e20 }}{{ 1e16 }}{{ 1e15 }}{{ 1.5e-5 }}{{ 0.0001 }}{{ -0.0 }}{{ 3.0 * 2 }})j", R"j({})j", R"j(0.300000000000000041e+201e+161000000000000000.01.5e-050.0001-0.06.0)j"},
    {R"j({{ "%s is %d"|format("x", 3) }}{{ "%.2f" % 3.14159 }})j", R"j({})j", R"j(x is 33.14)j"},
    {R"j({{ "it's" }}{{ ["it's", 'say "hi"', "both ' \""] }}{{ ['\t\x01é\u00a0'] }})j", R"j({})j", R"j(it's["it's", 'say "hi"', 'both \' "']['\t\x01é\xa0'])j"},
    {R"j({%- set x = 5 -%}  {{ x }}  {%+ if true %}y{% endif %})j", R"j({})j", R"j(5  y)j"},
    {R"j(  x)j", R"j({})j", R"j(  x)j"},
    {R"j(a
  {%- if true -%}
  b
  {%- endif -%}
  c)j", R"j({})j", R"j(abc)j"},
    {R"j(a
\t{% if true %}
\tb
\t{% endif %}
)j", R"j({})j", R"j(a
\t\tb
\t)j"},
    {R"j(  {{ 'x' }}
  {% set y = 1 %}
  z)j", R"j({})j", R"j(  x
  z)j"},
    {R"j({% for m in [1,2] %}
  {{ m }}
{% endfor %}
)j", R"j({})j", R"j(  1
  2
)j"},
    {R"j(x {# comment #}
 y)j", R"j({})j", R"j(x  y)j"},
    {R"j({%- if true %}a{% endif -%}

  b)j", R"j({})j", R"j(ab)j"},
    {R"j({% if true %}\r
  a\r
{% endif %}\r
)j", R"j({})j", R"j(\r
  a\r
\r)j"},
    {R"j({% macro m(x) -%}
  [{{ x }}]
{%- endmacro %}
{{ m(1) }}{{ m(2) }})j", R"j({})j", R"j([1][2])j"},
    {R"j({% set x %}
  block
{% endset %}[{{ x }}])j", R"j({})j", R"j([  block
])j"},
    {R"j({{ "a" }}

)j", R"j({})j", R"j(a
)j"},
    {R"j({% raw %}{{ x }}{% endraw %})j", R"j({})j", R"j({{ x }})j"},
    {R"j({%+ if true %}  x{% endif %})j", R"j({})j", R"j(  x)j"},
    {R"j(  {%+ if true %}x{% endif %})j", R"j({})j", R"j(  x)j"},
    {R"j( {%- raw -%} {{ }} {%- endraw -%} y)j", R"j({})j", R"j({{ }}y)j"},
    {R"j({% if true -%}

   a  {%- endif %})j", R"j({})j", R"j(a)j"},
    {R"j({{ '{{' }}{{ '}}' }}{{ {'a': {'b': 1}} }})j", R"j({})j", R"j({{}}{'a': {'b': 1}})j"},
    {R"j({% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}{% for (a, b) in [(1,2)] %}{{a+b}}{% endfor %})j", R"j({})j", R"j(12343)j"},
    {R"j({% for x in 'héllo' %}{{ x }},{% endfor %})j", R"j({})j", R"j(h,é,l,l,o,)j"},
    {R"j({% for x in {'b': 1, 'a': 2} %}{{ x }}{% endfor %}{{ {'b': 1, 'a': 2}|dictsort }})j", R"j({})j", R"j(ba[('a', 2), ('b', 1)])j"},
    {R"j({{ range(3)|list }}{{ range(1, 10, 3)|list }}{{ range(5, 0, -2)|list }}{% for i in range(3) %}{{ i }}{% endfor %})j", R"j({})j", R"j([0, 1, 2][1, 4, 7][5, 3, 1]012)j"},
    {R"j({{ x|default('d') }}{{ none|default('d') }}{{ ''|default('d', true) }}{{ x|d('e') }})j", R"j({})j", R"j(dNonede)j"},
    {R"j({{ [3,1,2]|sort }}{{ [3,1,2]|sort(reverse=true) }}{{ ['b','A','c']|sort }}{{ ['b','A','c']|sort(case_sensitive=true) }})j", R"j({})j", R"j([1, 2, 3][3, 2, 1]['A', 'b', 'c']['A', 'b', 'c'])j"},
    {R"j({{ [{'n': 2}, {'n': 1}]|sort(attribute='n') }}{{ [1,2,3]|sum }}{{ [1,2,3]|max }}{{ ['a','B']|min }}{{ [1,1,2]|unique|list }})j", R"j({})j", R"j([{'n': 1}, {'n': 2}]63a[1, 2])j"},
    {R"j({{ "hello world"|title }}{{ "hello WORLD"|capitalize }}{{ "a
b

c"|indent(2) }}|{{ "a
b"|indent(2, first=true) }}|{{ "a

b"|indent(2, blank=true) }})j", R"j({})j", R"j(Hello WorldHello worlda
  b

  c|  a
  b|a
  
  b)j"},
    {R"j({{ "x"|center(9) }}|{{ "ab"|center(9) }}|{{ "abc"|center(10) }}|{{ 'a b  c'|wordcount }})j", R"j({})j", R"j(    x    |    ab   |   abc    |3)j"},
    {R"j({{ 3.7|int }}{{ "42"|int }}{{ "x"|int }}{{ "3.5"|float }}{{ 5|float }}{{ -3|abs }}{{ 2.567|round(2) }})j", R"j({})j", R"j(34203.55.032.57)j"},
    {R"j({{ "<a href='x'>&</a>"|e }}{{ "%s-%s"|format(1, "a") }}{{ "%05.1f|%-4d|%x"|format(3.14159, 7, 255) }})j", R"j({})j", R"j(&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;1-a003.1|7   |ff)j"},
    {R"j({{ [1,2,3]|first }}{{ [1,2,3]|last }}{{ []|first }}{{ "abc"|first }}{{ {'a':1}|first }})j", R"j({})j", R"j(13aa)j"},
    {R"j({{ [1,2,3]|join('-') }}{{ [{'a': 'x'}, {'a': 'y'}]|join(',', attribute='a') }}{{ [1, none, 'a']|join }})j", R"j({})j", R"j(1-2-3x,y1Nonea)j"},
    {R"j({{ [1,2,3,4]|select('odd')|list }}{{ [1,2,3,4]|reject('even')|list }}{{ [0,1,'',2]|select|list }}{{ ['a','B']|map('upper')|list }})j", R"j({})j", R"j([1, 3][1, 3][1, 2]['A', 'B'])j"},
    {R"j({{ users|selectattr('active')|map(attribute='name')|list }}{{ users|rejectattr('name', 'in', ['a'])|list }})j", R"j({"users": [{"name": "a", "active": true}, {"name": "b", "active": false}]})j", R"j(['a'][{'name': 'b', 'active': False}])j"},
    {R"j({{ users|map(attribute='age', default=0)|list }}{{ users|map(attribute='name')|join(', ') }})j", R"j({"users": [{"name": "a"}, {"name": "b", "age": 3}]})j", R"j([0, 3]a, b)j"},
    {R"j({{ x is string }}{{ x is mapping }}{{ x is iterable }}{{ x is sequence }}{{ 1 is number }}{{ 1.0 is float }}{{ 1 is integer }}{{ none is none }}{{ x is defined }})j", R"j({})j", R"j(FalseFalseTrueTrueTrueTrueTrueTrueFalse)j"},
    {R"j({{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'a' is in 'abc' }}{{ 'ABC' is upper }}{{ 'abc' is lower }}{{ f is callable }}{{ range is callable }})j", R"j({})j", R"j(TrueTrueTrueTrueTrueTrueTrueTrue)j"},
    {R"j({{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 2 is ge 2 }}{{ 'a' is sameas 'a' }}{{ none is sameas none }}{{ true is true }}{{ 1 is true }})j", R"j({})j", R"j(TrueTrueTrueTrueTrueTrueTrueFalse)j"},
    {R"j({{ "a-b_c d".split('-') }}{{ "a b".rsplit(None, 1) }}{{ "  x ".lstrip() }}|{{ "xxaxx".strip('x') }}{{ "abc".find('c') }}{{ "héllo".find('l') }}{{ "aaa".count('a') }})j", R"j({})j", R"j(['a', 'b_c d']['a', 'b']x |a223)j"},
    {R"j({{ "abc".replace('b', 'X') }}{{ "Hello".upper() }}{{ "Hello".lower() }}{{ "hello world".title() }}{{ "bar's x".title() }}{{ "a".join(['1','2']) }}{{ "x".endswith('x') }})j", R"j({})j", R"j(aXcHELLOhelloHello WorldBar'S X1a2True)j"},
    {R"j({{ "{} and {}".format(1, 'b') }}{{ "{0}{name}".format('a', name='b') }}{{ "{:>5}|{:<4}|{:^6}|{:.2f}|{:03d}".format('a', 'b', 'c', 3.14159, 7) }})j", R"j({})j", R"j(1 and bab    a|b   |  c   |3.14|007)j"},
    {R"j({{ d.get('a') }}{{ d.get('z', 'def') }}{{ d.get('z') }}{{ d.keys()|list }}{{ d.values()|list }}{{ d.items()|list }}{{ d|length }}{{ 'a' in d }})j", R"j({"d": {"a": 1, "b": [1, 2]}})j", R"j(1defNone['a', 'b'][1, [1, 2]][('a', 1), ('b', [1, 2])]2True)j"},
    {R"j({{ l[5] }}|{{ l[-1] }}|{{ l.0 }}|{{ 5[0] }}|{{ l[1:] }}|{{ l[::2] }}|{{ l[:-1] }})j", R"j({"l": [1, 2, 3]})j", R"j(|3|1||[2, 3]|[1, 3]|[1, 2])j"},
    {R"j({{ 0 or 'x' }}{{ 1 and 'y' }}{{ none or [] }}{{ not 1 }}{{ not none is none }}{{ 'a ' + ' b '|trim }}{{ -3|abs }}{{ 1 if false }}|{{ 'y' if 0 else 'n' }})j", R"j({})j", R"j(xy[]FalseFalsea b3|n)j"},
    {R"j({{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}{{ 1 == 1.0 }}{{ 'a' < 'b' }}{{ [1,2] < [1,3] }}{{ 1 != 'a' }}{{ 'a' not in 'abc' }}{{ 2 in [1,2] }})j", R"j({})j", R"j(TrueFalseTrueTrueTrueTrueFalseTrue)j"},
    {R"j({{ 'a' * 3 }}{{ [1] * 2 }}{{ 3 * 'ab' }}{{ 'a' ~ 1 ~ none ~ true }}{{ [1] + [2] }}{{ (1,) + (2,) }}{{ 10 - 2.5 }}{{ 2 ** 10 }}{{ 2 ** 0.5 }})j", R"j({})j", R"j(aaa[1, 1]abababa1NoneTrue[1, 2](1, 2)7.510241.4142135623730951)j"},
    {R"j({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t }}{{ t|list }}{% set e = () %}{{ e }})j", R"j({})j", R"j(12(1, 2)[1, 2]())j"},
    {R"j({% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }})j", R"j({})j", R"j(3)j"},
    {R"j({% macro m(a, b=a) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1) }}{{ m(1, 2, 3, c=4) }})j", R"j({})j", R"j(11(){}12(3,){'c': 4})j"},
    {R"j({% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}inner{% endcall %})j", R"j({})j", R"j([inner])j"},
    {R"j({% macro m() %}[{{ caller(5) }}]{% endmacro %}{% call(x) m() %}v={{ x }}{% endcall %})j", R"j({})j", R"j([v=5])j"},
    {R"j({% filter upper %}abc {{ 'd' }}{% endfilter %}{% set z | upper %}q{% endset %}{{ z }})j", R"j({})j", R"j(ABC DQ)j"},
    {R"j({% for x in [1,2,3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% if x == 3 %}{% break %}{% endif %}{% endfor %})j", R"j({})j", R"j(13)j"},
    {R"j({% for x in [1,2] %}{% for y in [3] %}{{ loop.index }}{{ x }}{{ y }}{% endfor %}{{ loop.index }}{% endfor %}{{ x }}|{{ loop }})j", R"j({})j", R"j(11311232|)j"},
    {R"j({% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }};{{ loop.cycle('a','b') }}{% endfor %})j", R"j({})j", R"j(-2;a1-3;b2-;a)j"},
    {R"j({{ strftime_now('%Y-%m-%d %d %b %Y') }})j", R"j({})j", R"j(2026-07-26 26 Jul 2026)j"},
    {R"j({{ [1, [2, [3]]]|tojson }}{{ {'a': 'é"
<'}|tojson }}{{ 'x'|tojson }}{{ 1.0|tojson }}{{ none|tojson }}{{ [1,2]|tojson(indent=2) }}{{ {'a': [], 'b': {}}|tojson(indent='\t') }})j", R"j({})j", R"j([1, [2, [3]]]{"a": "é\"\n<"}"x"1.0null[
  1,
  2
]{
	"a": [],
	"b": {}
})j"},
    {R"j({{ {'b': 1, 'a': {'d': 1, 'c': 2}}|tojson(sort_keys=true, indent=1) }}{{ [1, 2]|tojson(separators=(',', ':')) }})j", R"j({})j", R"j({
 "a": {
  "c": 2,
  "d": 1
 },
 "b": 1
}[1,2])j"},
    {R"j({{ 'aé🌍'|reverse }}{{ [1,2]|reverse|list }}{{ 'abc'|list }}{{ 'héllo🌍'|length }}{{ [1,2,3,4,5]|batch(2)|list }}{{ [1,2,3]|batch(2, 'x')|list }})j", R"j({})j", R"j(🌍éa[2, 1]['a', 'b', 'c']6[[1, 2], [3, 4], [5]][[1, 2], [3, 'x']])j"},
    {R"j({{ 1e100 }}{{ 123456789012345678 }}{{ 0.000123 }}{{ 1/3 }}{{ 2.0**60 }}{{ 10**15 * 1.0 }}{{ 10**16 * 1.0 }}{{ -1.5e-7 }})j", R"j({})j", R"j(1e+1001234567890123456780.0001230.33333333333333331.152921504606847e+181000000000000000.01e+16-1.5e-07)j"},
    {R"j({{ "\\u00e9\\U0001F30D\\x41\\101\
" }})j", R"j({})j", R"j(\u00e9\U0001F30D\x41\101)j"},
    {R"j({{ 'it\'s' }}{{ "say \"hi\"" }}{{ ['a\\b'] }})j", R"j({})j", R"j(it'ssay "hi"['a\\b'])j"},
    {R"j({{ namespace(a=1, b=[1]) }}{% set ns = namespace() %}{% set ns.x = 'y' %}{{ ns.x }}{{ ns.missing }}|{{ ns['x'] }})j", R"j({})j", R"j(<Namespace {'a': 1, 'b': [1]}>y|y)j"},
    {R"j({{ dict(a=1, b=2) }}{{ dict({'c': 3}, d=4) }})j", R"j({})j", R"j({'a': 1, 'b': 2}{'c': 3, 'd': 4})j"},
    {R"j({{ (1, 2)[0] }}{{ [1, 2,] }}{{ {'a': 1,} }}{{ (1) }}{{ ('a',) }})j", R"j({})j", R"j(1[1, 2]{'a': 1}1('a',))j"},
    {R"j({{ "abc"[1:] ~ "abc"[-1] ~ "abc"[::-1] ~ "abcdef"[1:5:2] }}{{ [1,2,3][5:] }}{{ [1,2,3][-10:2] }})j", R"j({})j", R"j(bcccbabd[][1, 2])j"},
    {R"j({{ x | trim | upper }}{{ 'a' | replace('a', 'b') | upper }}{{ 'aaa'|replace('a', 'b', 2) }})j", R"j({"x": "  hi  "})j", R"j(HIBbba)j"},
    {R"j({{ messages[0]['content'] if messages else '' }}{{ messages|length > 0 }})j", R"j({"messages": [{"content": "c"}]})j", R"j(cTrue)j"},
    {R"j({% if messages[0].role == 'system' %}{{ messages[0].content }}{% set loop_messages = messages[1:] %}{% else %}{% set loop_messages = messages %}{% endif %}{{ loop_messages|length }})j", R"j({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "u"}]})j", R"j(S1)j"},
    {R"j({{ -7 // 2 }}{{ -7 % 3 }}{{ 7.5 % 2 }}{{ -7.5 % 2 }}{{ 5 % -3 }}{{ True + 1 }}{{ true * 3 }})j", R"j({})j", R"j(-421.50.5-123)j"},
    {R"j({{ 'abc' is string and 'abc'|length > 2 }}{{ [] is iterable }}{{ none is iterable }}{{ 1 is iterable }}{{ {} is sequence }}{{ '' is lower }}{{ x is undefined }})j", R"j({})j", R"j(TrueTrueFalseFalseTrueFalseTrue)j"},
};

const Case kErrorCases[] = {  // expected: jinja2's message, which ours must contain
    {R"j({{ x }}|{{ x is defined }}|{{ x.y }})j", R"j({})j", R"j('x' is undefined)j"},
    {R"j({{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }})j", R"j({})j", R"j(Conversation roles must alternate user/assistant/user/assistant/...)j"},
    {R"j({{ [1].append(2) }})j", R"j({})j", R"j(access to attribute 'append' of 'list' object is unsafe.)j"},
    {R"j({{ x|foo }})j", R"j({})j", R"j(No filter named 'foo'.)j"},
    {R"j({% foo %})j", R"j({})j", R"j(Encountered unknown tag 'foo'.)j"},
    {R"j({% if 1 %}{% endfor %})j", R"j({})j", R"j(Encountered unknown tag 'endfor'. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.)j"},
    {R"j({{ 1 + "a" }})j", R"j({})j", R"j(unsupported operand type(s) for +: 'int' and 'str')j"},
    {R"j({{ "a" + 1 }})j", R"j({})j", R"j(can only concatenate str (not "int") to str)j"},
    {R"j({{ x.y.z }})j", R"j({})j", R"j('x' is undefined)j"},
    {R"j({{ d.a.b }})j", R"j({"d": {}})j", R"j('dict object' has no attribute 'a')j"},
    {R"j({{ 1 < 'a' }})j", R"j({})j", R"j('<' not supported between instances of 'int' and 'str')j"},
    {R"j({{ 1 / 0 }})j", R"j({})j", R"j(division by zero)j"},
    {R"j({{ 1 // 0 }})j", R"j({})j", R"j(integer division or modulo by zero)j"},
    {R"j({{ x + 1 }})j", R"j({})j", R"j('x' is undefined)j"},
    {R"j({{ x() }})j", R"j({})j", R"j('x' is undefined)j"},
    {R"j({{ "a"() }})j", R"j({})j", R"j('str' object is not callable)j"},
    {R"j({{ l.append }}|{{ ''.__class__ }}|{{ {}.update(a=1) }})j", R"j({"l": []})j", R"j(access to attribute 'update' of 'dict' object is unsafe.)j"},
    {R"j({% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }})j", R"j({})j", R"j(macro 'm' takes not more than 1 argument(s))j"},
    {R"j({% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }})j", R"j({})j", R"j(macro 'm' takes no keyword argument 'b')j"},
    {R"j({{ m() }}{% macro m() %}x{% endmacro %})j", R"j({})j", R"j('m' is undefined)j"},
    {R"j({{ x|tojson }})j", R"j({})j", R"j(Object of type Undefined is not JSON serializable)j"},
};
// clang-format on

}  // namespace

TEST_CASE("jinja renders as jinja2 does", "[jinja]") {
  for (const Case& c : kCases) {
    INFO("template: " << c.source << "\ncontext: " << c.context);
    std::string rendered;
    REQUIRE_NOTHROW(rendered = Render(c.source, c.context));
    CHECK(rendered == c.expected);
  }
}

TEST_CASE("jinja raises where jinja2 raises", "[jinja]") {
  for (const Case& c : kErrorCases) {
    INFO("template: " << c.source << "\ncontext: " << c.context);
    CHECK_THROWS_WITH(Render(c.source, c.context), Catch::Matchers::Contains(c.expected));
  }
}

}  // namespace zinf::formats::jinja
