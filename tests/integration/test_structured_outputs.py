"""Structured output end to end through the official openai SDK against the served SmolLM2:
response_format and structured_outputs always give output valid for their schema or pattern,
tool_choice "required" / a named function always gives parseable calls with schema-valid
arguments (Hermes syntax, forced by the grammar), streamed equals whole, and refusals name the
field."""
import json
import re

import jsonschema
import openai
import pytest

from conftest import MODEL_NAME, Server, _require_binary_and_model

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "colors": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
        "born": {"type": "string", "format": "date"},
    },
    "required": ["name", "age", "colors"],
    "additionalProperties": False,
}

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 30},
                   "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                      "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "description": "The time now",
                                      "parameters": {"type": "object", "properties": {},
                                                     "additionalProperties": False}}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TOOLS[1]["function"]["parameters"]}
MSG = [{"role": "user", "content": "Tell me about a person, and what is the weather in Paris?"}]


@pytest.fixture(scope="module")
def sdk():
    _require_binary_and_model()
    s = Server(["--tool-parser", "hermes"])
    yield openai.OpenAI(base_url=s.url, api_key="unused", max_retries=0, timeout=120)
    assert s.alive()
    assert s.stop() == 0


def chat(sdk, seed, temperature=1.0, **kw):
    kw.setdefault("max_tokens", 160)
    return sdk.chat.completions.create(model=MODEL_NAME, messages=MSG, temperature=temperature,
                                       seed=seed, **kw)


def streamed(sdk, seed, temperature=1.0, **kw):
    content, calls, finish = "", {}, None
    kw.setdefault("max_tokens", 160)
    for chunk in sdk.chat.completions.create(model=MODEL_NAME, messages=MSG,
                                             temperature=temperature, seed=seed, stream=True,
                                             **kw):
        d = chunk.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            c["id"] += tc.id or ""
            c["name"] += (tc.function.name or "") if tc.function else ""
            c["arguments"] += (tc.function.arguments or "") if tc.function else ""
        finish = chunk.choices[0].finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


def json_schema_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "out", "schema": schema,
                                                   "strict": True}}


@pytest.mark.parametrize("seed", range(8))
def test_json_schema_output_always_validates(sdk, seed):
    r = chat(sdk, seed, temperature=1.0 if seed else 0.0,
             response_format=json_schema_format(PERSON))
    assert r.choices[0].finish_reason == "stop", r.choices[0].message.content
    value = json.loads(r.choices[0].message.content)
    jsonschema.validate(value, PERSON, format_checker=jsonschema.FormatChecker())


def test_json_object_output_is_an_object(sdk):
    for seed in range(3):
        r = chat(sdk, seed, response_format={"type": "json_object"}, max_tokens=400)
        if r.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(r.choices[0].message.content), dict)
        else:  # an open-ended object may run out of tokens, but what came is a JSON prefix
            assert r.choices[0].message.content.lstrip().startswith("{")


def test_unconstrained_output_is_not_json(sdk):  # what the grammar changes
    r = chat(sdk, 0, temperature=0.0)
    with pytest.raises(ValueError):
        json.loads(r.choices[0].message.content)


def test_structured_outputs_extension(sdk):
    r = chat(sdk, 1, extra_body={"structured_outputs": {"choice": ["alpha", "beta", "gamma"]}})
    assert r.choices[0].message.content in ("alpha", "beta", "gamma")
    r = chat(sdk, 2, extra_body={"structured_outputs": {"regex": "[A-Z][a-z]{2,8} [0-9]{1,3}"}})
    assert re.fullmatch("[A-Z][a-z]{2,8} [0-9]{1,3}", r.choices[0].message.content)
    r = chat(sdk, 3, extra_body={"structured_outputs": {
        "grammar": 'root ::= "x=" [0-9]+ ";"'}}, max_tokens=40)
    if r.choices[0].finish_reason == "stop":
        assert re.fullmatch(r"x=[0-9]+;", r.choices[0].message.content)


def check_calls(calls):
    assert calls
    for call in calls:
        assert call.type == "function" and call.id.startswith("call_")
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])
    assert len({c.id for c in calls}) == len(calls)


@pytest.mark.parametrize("seed", range(6))
def test_required_tool_choice_always_calls(sdk, seed):
    # One call, then the grammar allows only the end.
    r = chat(sdk, seed, temperature=1.0 if seed else 0.0, tools=TOOLS, tool_choice="required",
             parallel_tool_calls=False)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls", c.message
    assert len(c.message.tool_calls) == 1 and not (c.message.content or "").strip()
    check_calls(c.message.tool_calls)


def test_required_parallel_calls_are_each_valid(sdk):
    # This small model keeps adding calls where it may; every closed one is a valid call, and a
    # call the token limit cut stays text.
    for seed in range(3):
        r = chat(sdk, seed, tools=TOOLS, tool_choice="required", max_tokens=120)
        check_calls(r.choices[0].message.tool_calls)


def test_named_tool_choice_calls_that_function(sdk):
    for seed in range(3):
        r = chat(sdk, seed, tools=TOOLS,
                 tool_choice={"type": "function", "function": {"name": "get_weather"}})
        assert r.choices[0].finish_reason == "tool_calls"
        calls = r.choices[0].message.tool_calls
        assert [c.function.name for c in calls] == ["get_weather"]
        jsonschema.validate(json.loads(calls[0].function.arguments), WEATHER)


def test_streamed_equals_whole(sdk):
    whole = chat(sdk, 5, response_format=json_schema_format(PERSON))
    content, calls, finish = streamed(sdk, 5, response_format=json_schema_format(PERSON))
    assert content == whole.choices[0].message.content and finish == "stop" and not calls

    one = {"tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False}
    whole = chat(sdk, 4, **one)
    content, calls, finish = streamed(sdk, 4, **one)
    assert finish == "tool_calls"
    got = [(c["name"], json.loads(c["arguments"])) for c in calls]
    want = [(c.function.name, json.loads(c.function.arguments))
            for c in whole.choices[0].message.tool_calls]
    assert got == want


def test_unsupported_schema_keyword_is_a_400_naming_it(sdk):
    bad = {"type": "object", "patternProperties": {"^x": {"type": "string"}}}
    with pytest.raises(openai.BadRequestError) as e:
        chat(sdk, 0, response_format=json_schema_format(bad))
    assert e.value.body["param"] == "response_format"
    assert "patternProperties" in e.value.body["message"]


def test_named_tool_that_was_not_offered_is_a_400(sdk):
    with pytest.raises(openai.BadRequestError) as e:
        chat(sdk, 0, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}})
    assert e.value.body["param"] == "tool_choice"
