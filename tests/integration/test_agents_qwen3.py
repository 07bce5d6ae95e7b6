"""Agents against a tiny random-weight Qwen3 with the real Qwen3 tokenizer and chat template,
through the official openai SDK: the Hermes call syntax and think block are detected from the
template; tool_choice "required" always gives a schema-valid call; response_format always gives
valid JSON, after a reasoning block the engine closes at max_thinking_tokens; reasoning tokens are
counted; concurrent replies equal solo ones."""
import json
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import openai
import pytest

from conftest import Server, binary
from tiny_qwen3 import TOKENIZER, write_checkpoint

NAME = "tiny-qwen3"
THINK = 151667  # <think> in the Qwen3 vocabulary
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 20},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "days"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "forecast", "description": "Weather forecast",
                                           "parameters": WEATHER}}]
ANSWER = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2, 3]}},
          "required": ["ok", "n"], "additionalProperties": False}
MSG = [{"role": "user", "content": "What will the weather be in Lisbon this week?"}]


@pytest.fixture(scope="module")
def sdk(tmp_path_factory):
    if not binary().exists() or not (TOKENIZER / "tokenizer.json").exists():
        pytest.skip("needs the tensorfold binary and ../shared/tokenizers/qwen3")
    model = write_checkpoint(tmp_path_factory.mktemp("tiny-qwen3"))
    s = Server(["--name", NAME, "--alias", "tq3", "--context", "4096"], model=model)
    yield openai.OpenAI(base_url=s.url, api_key="unused", max_retries=0, timeout=120)
    assert s.alive()
    assert s.stop() == 0


def chat(sdk, seed, **kw):
    kw.setdefault("max_tokens", 120)
    return sdk.chat.completions.create(model=NAME, messages=MSG, temperature=1.0, seed=seed, **kw)


def schema_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "a", "schema": schema, "strict": True}}


@pytest.mark.parametrize("seed", range(5))
def test_required_tool_choice_gives_a_valid_call(sdk, seed):
    r = chat(sdk, seed, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
             extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    c = r.choices[0]
    assert c.finish_reason == "tool_calls", c.message
    [call] = c.message.tool_calls
    assert call.function.name == "forecast" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)


def test_streamed_call_equals_whole(sdk):
    kw = {"tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False}
    whole = chat(sdk, 11, **kw).choices[0].message.tool_calls[0].function
    args, names, finish = "", "", None
    for chunk in chat(sdk, 11, stream=True, **kw):
        for tc in chunk.choices[0].delta.tool_calls or []:
            names += tc.function.name or ""
            args += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and names == whole.name
    assert json.loads(args) == json.loads(whole.arguments)


@pytest.mark.parametrize("seed", range(4))
def test_response_format_gives_valid_json(sdk, seed):
    r = chat(sdk, seed, response_format=schema_format(WEATHER))
    assert r.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(r.choices[0].message.content), WEATHER)


def test_thinking_budget_then_the_grammar(sdk):
    # The bias makes the model open its think block; the engine closes it after 6 tokens and the
    # answer follows under the schema.
    r = chat(sdk, 3, response_format=schema_format(ANSWER), logit_bias={str(THINK): 100},
             extra_body={"max_thinking_tokens": 6})
    m = r.choices[0].message
    assert r.choices[0].finish_reason == "stop", m
    jsonschema.validate(json.loads(m.content), ANSWER)
    reasoning = m.model_extra.get("reasoning_content") or m.model_extra.get("reasoning")
    assert reasoning, m
    assert r.usage.completion_tokens_details.reasoning_tokens == 8  # <think>, 6 tokens, </think>


def test_concurrent_replies_equal_solo(sdk):
    kws = [dict(seed=s, response_format=schema_format(WEATHER)) for s in range(4)] + \
          [dict(seed=s, tools=TOOLS, tool_choice="required") for s in range(4)]
    solo = [chat(sdk, **kw).choices[0].message for kw in kws]
    with ThreadPoolExecutor(len(kws)) as pool:
        together = list(pool.map(lambda kw: chat(sdk, **kw).choices[0].message, kws))
    for a, b in zip(solo, together):
        assert a.content == b.content
        assert [(c.function.name, c.function.arguments) for c in a.tool_calls or []] == \
               [(c.function.name, c.function.arguments) for c in b.tool_calls or []]
