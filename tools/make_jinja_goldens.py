#!/usr/bin/env python3
"""Makes tests/fixtures/chat/jinja_builtins.json: how Python jinja2 renders each builtin filter and
test our engine implements, on none, undefined, empty and typical inputs.

jinja2 is set up the way transformers' apply_chat_template sets it up (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loopcontrols, default Undefined, transformers' tojson). Each case is a
template and a context; the golden holds jinja2's output, or "error" where jinja2 raised (the C++
test then requires a clean, located error). The input `v` is absent from the context for the
undefined case.

Run from the repository root:  python3 tools/make_jinja_goldens.py
"""
import copy
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "chat", "jinja_builtins.json")
UNDEF = object()  # marks "leave v out of the context"

# Inputs every filter and test is applied to.
INPUTS = {
    "undefined": UNDEF,
    "none": None,
    "empty_str": "",
    "str": "hello World-wide (x) 42",
    "ws_str": "  Two\n lines \t",
    "empty_list": [],
    "ints": [3, 1, 2, 1],
    "strs": ["b", "A", "c", "a"],
    "empty_dict": {},
    "dict": {"b": 1, "A": 3, "a": 2},
    "int": 42,
    "neg_float": -2.5,
    "true": True,
    "false": False,
}

# Filter applications, each written after `v |`. Filters that return iterators in jinja2 end in
# `| list` so the output is a value rather than an object address.
FILTERS = [
    "abs", "attr('b')", "attr('nope')", "batch(2) | list", "batch(3, 'x') | list",
    "batch(3, none) | list", "capitalize", "center(30)", "center", "count", "d", "d('dflt')",
    "default('dflt', true)", "default(none)", "dictsort", "dictsort(true)",
    "dictsort(by='value')", "dictsort(reverse=true)", "dictsort(by='nope')", "e", "escape",
    "first", "float", "float(-1.5)", "forceescape", "format", "indent", "indent(2, true)",
    "indent('> ', blank=true)", "int", "int(-7)", "items | list", "join", "join('-')",
    "last", "length", "list", "lower", "map('upper') | list", "map('string') | join(',')",
    "max", "max(case_sensitive=true)", "min", "min(case_sensitive=true)", "pprint",
    "reject | list", "reject('odd') | list", "reverse | list", "round", "round(1)",
    "round(1, 'floor')", "round(0, 'ceil')", "safe", "select | list", "select('odd') | list",
    "select('string') | list", "slice(2) | list", "slice(3, 0) | list", "sort",
    "sort(reverse=true)", "sort(case_sensitive=true)", "string", "sum", "sum(start=10)",
    "title", "tojson", "tojson(indent=2)", "trim", "trim('x')", "truncate(9)",
    "truncate(9, true)", "truncate(12, false, '..', 0)", "unique | list",
    "unique(case_sensitive=true) | list", "upper", "wordcount",
]

# Tests, each written after `v is`.
TESTS = [
    "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true",
    "false", "mapping", "iterable", "sequence", "callable", "lower", "upper", "even", "odd",
    "divisibleby 3", "divisibleby 0", "eq 42", "equalto ''", "== none", "ne 42", "!= []",
    "lt 50", "lessthan 'm'", "< 0", "gt 1", "greaterthan 'a'", "> -3", "le 42", "<= 'z'",
    "ge 42", ">= 0", "in [42, '', none, [], {}]", "in 'hello World'", "in {'b': 0}",
    "sameas none", "sameas true", "escaped", "not defined", "not none",
]

# Inputs of particular shapes: attribute paths, records, nesting, Unicode, numbers. Case mapping in
# the engine is ASCII-only (chat templates case-map role names), so no case here depends on
# Unicode case data.
RECORDS = [
    {"name": "b", "role": "user", "n": 2, "fn": {"name": "f2"}, "tags": ["x"]},
    {"name": "A", "role": "tool", "n": 1, "fn": {"name": "f1"}},
    {"name": "a", "role": "user", "n": 3, "fn": {"name": "f3"}, "tags": []},
]
SPECIAL = [
    ("{{ v | selectattr('role', 'eq', 'user') | map(attribute='name') | join(',') }}", RECORDS),
    ("{{ v | rejectattr('tags') | map(attribute='n') | list }}", RECORDS),
    ("{{ v | selectattr('tags', 'defined') | map(attribute='fn.name') | list }}", RECORDS),
    ("{{ v | selectattr('nope') | list }}", RECORDS),
    ("{{ v | selectattr('tags.0', 'none') | list }}", RECORDS),
    ("{{ v | selectattr('n', 'gt', 1) | list | length }}", RECORDS),
    ("{{ v | rejectattr('role', 'in', ['tool']) | map(attribute='name') | list }}", RECORDS),
    ("{{ v | selectattr | list }}", RECORDS),
    ("{{ v | map(attribute='tags') | list }}", RECORDS),
    ("{{ v | map(attribute='tags', default='-') | list }}", RECORDS),
    ("{{ v | map(attribute='tags.0', default='-') | list }}", RECORDS),
    ("{{ v | map(attribute='n') | sum }}", RECORDS),
    ("{{ v | sum(attribute='n') }}", RECORDS),
    ("{{ v | sum(attribute='fn') }}", RECORDS),
    ("{{ v | sort(attribute='name') | map(attribute='n') | list }}", RECORDS),
    ("{{ v | sort(attribute='name', case_sensitive=true) | map(attribute='n') | list }}", RECORDS),
    ("{{ v | sort(attribute='role,n', reverse=true) | map(attribute='name') | join }}", RECORDS),
    ("{{ v | sort(attribute='tags') | list }}", RECORDS),
    ("{{ v | unique(attribute='role') | map(attribute='name') | list }}", RECORDS),
    ("{{ v | unique | list }}", RECORDS),
    ("{{ v | min(attribute='n') }}|{{ v | max(attribute='name') }}", RECORDS),
    ("{{ v | max(attribute='name', case_sensitive=true) }}", RECORDS),
    ("{{ v | join(', ', attribute='fn.name') }}", RECORDS),
    ("{{ v | join(attribute='nope') }}|", RECORDS),
    ("{{ v | map('tojson') | join(';') }}", RECORDS),
    ("{{ v | tojson(sort_keys=true) }}", RECORDS),
    ("{{ v | tojson(separators=(',', ':')) }}", RECORDS),
    ("{{ v | first | items | list }}", RECORDS),
    ("{{ v | map('dictsort') | map('first') | list }}", RECORDS),
    ("{{ v | batch(2, {}) | map('length') | list }}", RECORDS),
    ("{{ v | pprint }}", RECORDS),
    ("{{ v | map('attr', 'nope') | list }}", RECORDS),
    ("{{ v | map('default', 'x') | map(attribute='n') | list }}", RECORDS),
    ("{{ v | length }}|{{ v[0] | length }}|{{ v[0].tags | count }}", RECORDS),
    ("{{ v | map('int') | list }}", ["4", " 5 ", "6.7", "1e3", "x", "", "4_2", "0x1f", "-0"]),
    ("{{ v | map('float') | list }}", ["4", " 5 ", "6.7", "1e3", "x", "", "-inf", "1_0.5"]),
    ("{{ v | map('round') | list }}", [0.5, 1.5, 2.5, -0.5, 2.675, 1e16, 7]),
    ("{{ v | map('round', 2) | list }}", [2.675, 1.005, 0.125, -1.115, 3, 1e-7]),
    ("{{ v | map('round', -1) | list }}", [15, 25, 14.9, -25, 5.0]),
    ("{{ v | map('round', 0, 'floor') | list }}", [1.5, -1.5, 2]),
    ("{{ v | map('abs') | list }}", [-1, 0, -0.0, 2.5, True, False]),
    ("{{ v | sum }}|{{ v | min }}|{{ v | max }}", [1, 2.5, True, -4]),
    ("{{ v | sum }}", [[1], [2, 3]]),
    ("{{ v | sum(start=[]) }}", [[1], [2, 3]]),
    ("{{ v | sum(start='') }}", ["a", "b"]),
    ("{{ v | unique | list }}", [1, 1.0, True, "1", "a", "A", 2]),
    ("{{ v | unique(case_sensitive=true) | list }}", ["a", "A", "a"]),
    ("{{ v | unique | list }}", [[1], [1]]),
    ("{{ v | sort | list }}", [[2, "a"], [1, "b"], [1, "a"]]),
    ("{{ v | sort }}", [1, "a"]),
    ("{{ v | sort }}", [None, 1]),
    ("{{ v | dictsort }}", {"b": None, "a": 1}),
    ("{{ v | dictsort(by='value') }}", {"b": None, "a": 1}),
    ("{{ v | dictsort(by='value') }}", {"x": "b", "y": "B", "z": "a"}),
    ("{{ v | dictsort(true, 'value', true) }}", {"x": "b", "y": "B", "z": "a"}),
    ("{{ v | upper }}|{{ v | lower }}|{{ v | title }}|{{ v | capitalize }}", "hELLO wORLD-x"),
    ("{{ v | length }}|{{ v | reverse }}|{{ v | center(9) }}", "straße"),
    ("{{ v | wordcount }}|{{ v | truncate(7) }}|{{ v | first }}|{{ v | last }}", "héllo wörld ça"),
    ("{{ v | title }}", "hello-world (foo) [bar] {baz} <qux> a_b o'neil x1y"),
    ("{{ v | wordcount }}", "one, two-three; four_five 6 ... — ü"),
    ("{{ v | indent }}", "a\nb\n\nc\n"),
    ("{{ v | indent(first=true, blank=true) }}", "a\nb\n\nc\n"),
    ("{{ v | indent(1) }}", "a\r\nb\rc\x0bd\x1ce"),
    ("{{ v | trim }}|{{ v | trim('ab') }}", "\u3000\x1f a b\xa0"),
    ("{{ v | replace('a', 'o') }}|{{ v | replace('a', 'o', 1) }}|{{ v | replace('', '.') }}",
     "banana"),
    ("{{ v | replace('a', 1) }}|{{ v | replace(none, 'x') }}", "None and a"),
    ("{{ v | format(1, 'b') }}", "%d-%s"),
    ("{{ v | format(x=1) }}", "%(x)s!"),
    ("{{ v | format(1, x=2) }}", "%s"),
    ("{{ v | format([1, 2]) }}|{{ v | format((1, 2)) }}", "%s"),
    ("{{ v | format }}", "100%"),
    ("{{ v | truncate(5) }}|{{ v | truncate(2) }}", "abcdefghijkl"),
    ("{{ v | truncate(10, leeway=0) }}|{{ v | truncate(6, end='') }}", "foo bar baz qux"),
    ("{{ v | center(11) }}|{{ v | center(12) }}|{{ v | center(2) }}", "abc"),
    ("{{ v | center(10) }}", "ab"),
    ("{{ v | batch(0) | list }}|{{ v | slice(-1) | list }}", [1, 2, 3]),
    ("{{ v | slice(0) | list }}", [1, 2, 3]),
    ("{{ v | slice(4, 'x') | list }}|{{ v | slice(2, 'x') | list }}", [1, 2, 3, 4, 5]),
    ("{{ v | tojson }}", {"s": "é\"\\\n\t\u0001/", "f": [1.0, 1e-7, 1e16, 0.1], "n": None}),
    ("{{ v | tojson(indent=1) }}|{{ v | tojson(indent='\t') }}", {"a": [1, {}], "b": []}),
    ("{{ v | tojson(sort_keys=true) }}", {"b": {"d": 1, "c": 2}, "a": 0}),
    ("{{ (1, 'a') | tojson }}|{{ {1: 'x', true: 'y', none: 'z'} | tojson }}", None),
    ("{{ {'b': 1, 2: 'x'} | tojson(sort_keys=true) }}", None),
    ("{{ v | pprint }}", {"zeta": [1, 2.5, None, True], "alpha": {"y": "it's", "x": "q\"'"}}),
    ("{{ v | pprint }}", [{"role": "user", "content": "a fairly long message of text"},
                         {"role": "assistant", "content": "another fairly long one"}]),
    ("{{ v | pprint }}", "a string with 'quotes'"),
    ("{{ (1,) | pprint }}|{{ () | pprint }}|{{ (1, [2]) | pprint }}", None),
    ("{{ v | e }}|{{ v | forceescape }}|{{ v | safe }}", "<a href=\"x\">'&'</a>"),
    ("{{ v | e | length }}|{{ v | safe | length }}|{{ v | string | length }}", "<&>"),
    ("{{ v | first }}|{{ v | last }}|{{ v | list }}|{{ v | reverse | list }}", {"k1": 1, "k2": 2}),
    ("{{ v | items | list }}|{{ v | dictsort | first }}", {"k1": [1], "k0": {"x": None}}),
    ("{{ v | length }}|{{ v | list | length }}", "ünï"),
    ("{{ v | join('|') }}|{{ v | join }}", [1, None, True, "x", [2], 2.0]),
    ("{{ v | select('divisibleby', 2) | list }}|{{ v | reject('lt', 2) | list }}", [1, 2, 3, 4]),
    ("{{ v | select('in', [2, 3]) | list }}|{{ v | select('sameas', 2) | list }}", [1, 2, 3, 4]),
    ("{{ v | select('none') | list }}|{{ v | reject('defined') | list }}", [None, 0, "", 1]),
    ("{{ v | select('equalto', 0) | list }}|{{ v | select('false') | list }}", [None, 0, False]),
    ("{{ v | map('lower') | select('eq', 'a') | list | length }}", ["a", "A", "b"]),
    ("{{ v | map('length') | max }}", ["aa", "b", "cccc"]),
    ("{{ v | map('batch', 1) | map('list') | list }}", ["ab", "c"]),
    ("{{ v | select('even') | list }}", [1, 2.0, 3.0, 4, True, False]),
    ("{{ v | select('odd') | list }}", [1.5, 3.0, -1, -2]),
    ("{{ v | select('divisibleby', 1.5) | list }}", [3, 4.5, 5, 0]),
    ("{{ v | select('lower') | list }}|{{ v | select('upper') | list }}",
     ["a", "A", "", "1", "a1", "A1", "a-é", "A-É", None]),
    ("{{ v is sequence }}|{{ v is iterable }}|{{ v is mapping }}|{{ v is number }}", [1]),
    ("{{ v.items is callable }}|{{ v.nope is callable }}|{{ v is callable }}", {"x": 1}),
    ("{{ v is sameas v }}|{{ v is sameas [1] }}|{{ v == [1] }}", [1]),
    ("{{ v is eq 1 }}|{{ v is eq true }}|{{ v is ne 1.0 }}|{{ v is ge 1 }}", 1.0),
    ("{{ v is lt 'b' }}|{{ v is gt 'A' }}|{{ v is le 'a' }}|{{ v is in 'cat' }}", "a"),
    ("{{ v is lt [1, 3] }}|{{ v is gt [1] }}|{{ v is ge [1, 2] }}", [1, 2]),
    ("{{ v is divisibleby 2 }}", "x"),
    ("{{ v is lt 1 }}", "x"),
    ("{{ v is in 3 }}", 1),
    ("{{ v is in none }}", 1),
    ("{{ v is in 'abc' }}", 1),
    ("{{ v | first is undefined }}|{{ v | last is undefined }}|{{ v | min is undefined }}", []),
    ("{{ v | first | default('empty') }}|{{ v | max | default('none') }}", []),
    ("{{ v | first is defined }}|{{ v | first }}", [None]),
    ("{{ v | default(v) is undefined }}|{{ v | d('x', true) }}", UNDEF),
    ("{{ v | map(attribute='a') | list }}|{{ v | select | list }}", UNDEF),
    ("{{ v.x | default('dx') }}|{{ v['y'] | d('dy') }}", {"y": None}),
    ("{{ v.x is defined }}|{{ v.x.y is defined }}", {"x": None}),
    ("{{ v.x.y is defined }}", {}),
    ("{{ v | batch(2) | map('join', '+') | join(' ') }}", "abcde"),
    ("{{ v | slice(2) | map('join') | join(' ') }}", "abcde"),
    ("{{ v | sort | join }}|{{ v | unique | join }}|{{ v | min }}|{{ v | max }}", "bAcab"),
    ("{{ v | reverse }}|{{ v | list | reverse | join }}", "abc"),
    ("{% for k, x in v | dictsort %}{{ k }}={{ x }};{% endfor %}", {"b": 1, "a": 2}),
    ("{% for k, x in v | items %}{{ k }}={{ x }};{% endfor %}", {"b": 1, "a": 2}),
    ("{% for x in v | batch(2) %}{{ x }}\n{% endfor %}", [1, 2, 3]),
    ("{% filter upper %}a{{ v }}b{% endfilter %}", "c"),
    ("{% filter indent(2) | trim %}\nx\ny\n{% endfilter %}", None),
    ("{% set x | replace('a', 'b') %}aaa{{ v }}{% endset %}{{ x }}", "a"),
    ("{{ v | int }}|{{ v | float }}|{{ v | string }}|{{ v | abs }}|{{ v | round }}", True),
    ("{{ v | round(1) }}|{{ v | round(-1) }}|{{ v | round(2, 'ceil') }}", 12345),
    ("{{ v | int }}|{{ v | int(base=16) }}|{{ v | int(5, 2) }}", "10"),
    ("{{ v | int }}|{{ v | float | int }}", "-3.99"),
    ("{{ v | float }}|{{ v | float | string }}", "1e400"),
    ("{{ v | attr('role') }}|{{ v | attr('nope') is undefined }}", {"role": "user"}),
    ("{{ (v | attr('nope')).x }}", {"role": "user"}),
    ("{{ v | list | batch(2) | list }}", {"a": 1, "b": 2, "c": 3}),
    ("{{ v | count }}|{{ v | wordcount }}", "a  b\n\tc"),
]


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' override of Jinja's tojson filter
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    return env


def all_cases():
    for name, value in INPUTS.items():
        for f in FILTERS:
            yield f"{{{{ v | {f} }}}}", value
        for t in TESTS:
            yield f"{{{{ v is {t} }}}}", value
    yield from SPECIAL


def render(env, source, value):
    context = {} if value is UNDEF else {"v": value}
    case = {"template": source, "context": context}
    try:
        # A copy: some filters mutate their input (indent does `s += "\n"`, extending a list).
        out = env.from_string(source).render(**copy.deepcopy(context))
    except Exception as e:  # jinja2 and Python errors alike: our engine must refuse too
        case["error"] = f"{type(e).__name__}: {e}"
        return case
    if " at 0x" in out or "<generator" in out:
        sys.exit(f"unstable output for {source!r}: {out!r} (add `| list`)")
    case["expected"] = out
    return case


def main():
    if not jinja2.__version__.startswith("3.1."):
        sys.exit(f"needs jinja2 3.1.x, found {jinja2.__version__}")
    env = make_env()
    cases = [render(env, s, v) for s, v in all_cases()]
    doc = {"generator": "tools/make_jinja_goldens.py", "jinja2": jinja2.__version__,
           "cases": cases}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0, separators=(",", ":"))
        f.write("\n")
    errors = sum("error" in c for c in cases)
    print(f"wrote {OUT}: {len(cases)} cases ({errors} expect an error)")


if __name__ == "__main__":
    main()
