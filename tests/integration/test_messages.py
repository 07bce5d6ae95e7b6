"""Anthropic Messages (/v1/messages, /v1/messages/count_tokens) through the official anthropic SDK
against the real server: whole and streamed replies, event order, stops, tools, errors."""
import http.client
import json
import re

import anthropic
import pytest

from conftest import MODEL_NAME, Server

MSG = [{"role": "user", "content": "Name three colors."}]
# The SDK no longer takes sampling fields as arguments; the API still does.
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def ac(server):
    return anthropic.Anthropic(base_url=f"http://{server.host}:{server.port}", api_key="unused",
                               max_retries=0, timeout=120)


def test_create_has_every_field(ac):
    m = ac.messages.create(model=MODEL_NAME, max_tokens=8, messages=MSG, extra_body=GREEDY,
                           system="You are terse.")
    assert m.id.startswith("msg_") and m.type == "message" and m.role == "assistant"
    assert m.model == MODEL_NAME
    assert [b.type for b in m.content] == ["text"] and m.content[0].text
    assert m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens > 5
    assert 0 < m.usage.output_tokens <= 8


def test_max_tokens_stop_reason(ac):
    m = ac.messages.create(model=MODEL_NAME, max_tokens=3, messages=MSG, extra_body=GREEDY)
    assert m.stop_reason == "max_tokens" and m.usage.output_tokens == 3


def test_stream_matches_create_and_keeps_anthropic_event_order(ac):
    whole = ac.messages.create(model=MODEL_NAME, max_tokens=10, messages=MSG, extra_body=GREEDY)
    with ac.messages.stream(model=MODEL_NAME, max_tokens=10, messages=MSG,
                            extra_body=GREEDY) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == whole.content[0].text == final.content[0].text
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens
    events = list(ac.messages.create(model=MODEL_NAME, max_tokens=10, messages=MSG,
                                     extra_body=GREEDY, stream=True))
    kinds = " ".join(e.type for e in events)
    assert re.fullmatch(r"message_start( ping)*( content_block_start( content_block_delta)+"
                        r" content_block_stop)* message_delta message_stop", kinds), kinds
    start = events[0].message
    assert start.content == [] and start.stop_reason is None and start.usage.input_tokens > 5
    delta = [e for e in events if e.type == "message_delta"][0]
    assert delta.delta.stop_reason == whole.stop_reason
    assert delta.usage.output_tokens == whole.usage.output_tokens
    assert delta.usage.cache_read_input_tokens is not None


def test_stop_sequence(ac):
    whole = ac.messages.create(model=MODEL_NAME, max_tokens=16, messages=MSG, extra_body=GREEDY)
    text = whole.content[0].text
    words = [w for w in re.findall(r"[A-Za-z]{3,}", text)]
    assert len(words) >= 2, text
    stop = words[1]
    m = ac.messages.create(model=MODEL_NAME, max_tokens=16, messages=MSG, extra_body=GREEDY,
                           stop_sequences=["@@never@@", stop])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == text[:text.index(stop)]


def test_count_tokens_equals_the_prompt_of_create(ac):
    n = ac.messages.count_tokens(model=MODEL_NAME, messages=MSG, system="You are terse.")
    m = ac.messages.create(model=MODEL_NAME, max_tokens=2, messages=MSG, system="You are terse.",
                           extra_body=GREEDY)
    assert n.input_tokens == m.usage.input_tokens + m.usage.cache_read_input_tokens


TOOLS = [{"name": "get_weather", "description": "Current weather of a city.",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}}]


def tool_history(result):
    return [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather",
                 "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": result}]}]


def test_tool_use_round_trip_is_rendered_and_accepted(ac):
    short = ac.messages.count_tokens(model=MODEL_NAME, tools=TOOLS,
                                     messages=tool_history("21 C"))
    long = ac.messages.count_tokens(model=MODEL_NAME, tools=TOOLS, messages=tool_history(
        [{"type": "text", "text": "21 C, sunny, light wind from the west all afternoon"}]))
    assert long.input_tokens > short.input_tokens  # the tool result reaches the prompt
    m = ac.messages.create(model=MODEL_NAME, max_tokens=6, tools=TOOLS, extra_body=GREEDY,
                           messages=tool_history("21 C"), tool_choice={"type": "auto"})
    assert m.stop_reason in ("end_turn", "max_tokens", "tool_use")
    for b in m.content:
        assert b.type in ("text", "tool_use")
        if b.type == "tool_use":
            assert b.name == "get_weather" and isinstance(b.input, dict)
    err = ac.messages.count_tokens(model=MODEL_NAME, tools=TOOLS,
                                   messages=tool_history([{"type": "text", "text": "x"}]) + [
                                       {"role": "assistant", "content": "ok"}])
    assert err.input_tokens > short.input_tokens


def test_thinking_and_tool_choice_go_through_output_controls(ac):
    m = ac.messages.create(model=MODEL_NAME, max_tokens=3, messages=MSG, extra_body=GREEDY,
                           thinking={"type": "disabled"})
    assert m.content[0].type == "text"
    # A budget or a forced call is either honoured or refused by name, never ignored.
    for extra, field in [({"thinking": {"type": "enabled", "budget_tokens": 1024},
                          "max_tokens": 1025},
                          "thinking.budget_tokens"),
                         ({"tool_choice": {"type": "any"}, "tools": TOOLS}, "tool_choice")]:
        body = {"model": MODEL_NAME, "max_tokens": 3, "messages": MSG, **extra}
        try:
            r = ac.messages.create(**body)
            assert r.type == "message"
        except anthropic.BadRequestError as e:
            assert field in e.body["error"]["message"], e.body


def raw(server, body, headers=None):
    status, j = server.request("POST", "/v1/messages", body,
                               headers={"anthropic-version": "2023-06-01", **(headers or {})})
    return status, j


BAD = [
    ({"max_tokens": None}, "max_tokens"),
    ({"max_tokens": "8"}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"messages": "hi"}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"type": "video"}]}]}, "messages[0].content[0]"),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages[0].content[0]"),
    ({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_nope", "content": "1"}]}]},
     "messages[0].content[0].tool_use_id"),
    ({"messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}]},
     "messages[0].content[0].input"),
    ({"system": 5}, "system"),
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": 1.5}, "temperature"),
    ({"top_p": 2}, "top_p"),
    ({"top_k": -1}, "top_k"),
    ({"stop_sequences": "x"}, "stop_sequences"),
    ({"stream": "yes"}, "stream"),
    ({"metadata": []}, "metadata"),
    ({"tools": {}}, "tools"),
    ({"tools": [{"name": "f"}]}, "tools[0].input_schema"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
    ({"tool_choice": "auto"}, "tool_choice"),
    ({"tool_choice": {"type": "sometimes"}}, "tool_choice.type"),
    ({"tool_choice": {"type": "tool"}}, "tool_choice.name"),
    ({"thinking": {"type": "enabled", "budget_tokens": 10}}, "thinking.budget_tokens"),
    ({"thinking": {"type": "maybe"}}, "thinking.type"),
    ({"model": 7}, "model"),
    ({"output_config": {"format": {"type": "regex"}}}, "output_config.format"),
    ({"output_config": {"effort": "extreme"}}, "output_config.effort"),
    ({"container": "c1"}, "container"),
]


@pytest.mark.parametrize("extra,field", BAD, ids=[f for _, f in BAD])
def test_bad_fields_get_anthropic_400_naming_them(server, extra, field):
    body = {"model": MODEL_NAME, "max_tokens": 8, "messages": MSG}
    body.update(extra)
    body = {k: v for k, v in body.items() if v is not None}
    status, j = raw(server, body)
    assert status == 400, j
    assert j["type"] == "error" and j["error"]["type"] == "invalid_request_error", j
    assert f"'{field}'" in j["error"]["message"], j


def test_unknown_model_and_bad_json_and_route(server):
    status, j = raw(server, {"model": "nope", "max_tokens": 8, "messages": MSG})
    assert status == 404 and j["error"]["type"] == "not_found_error"
    status, j = server.request("POST", "/v1/messages", b"{not json")
    assert status == 400 and j["type"] == "error" and j["error"]["type"] == "invalid_request_error"
    status, j = server.request("GET", "/v1/messages")
    assert status == 405 and j["type"] == "error"


def test_refused_then_good_on_one_keep_alive_connection(server):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        for body, want in [({"model": MODEL_NAME, "messages": MSG}, 400),
                           ({"model": MODEL_NAME, "max_tokens": 2, "messages": MSG}, 200)]:
            conn.request("POST", "/v1/messages", json.dumps(body),
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = json.loads(resp.read())
            assert resp.status == want, data
        assert data["type"] == "message"
    finally:
        conn.close()


def test_x_api_key_and_authentication_error_envelope():
    s = Server(["--api-key", "sekrit", "--parallel", "2"])
    try:
        bad = anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key="wrong",
                                  max_retries=0)
        with pytest.raises(anthropic.AuthenticationError) as e:
            bad.messages.create(model=MODEL_NAME, max_tokens=2, messages=MSG)
        assert e.value.body["type"] == "error"
        assert e.value.body["error"]["type"] == "authentication_error"
        good = anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key="sekrit",
                                   max_retries=0)
        assert good.messages.count_tokens(model=MODEL_NAME, messages=MSG).input_tokens > 0
    finally:
        assert s.stop() == 0


@pytest.fixture(scope="module")
def hermes_ac():
    """A server that parses Hermes tool calls, so a forced call comes back as a tool_use block."""
    s = Server(["--tool-parser", "hermes", "--parallel", "2"])
    yield anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key="unused",
                              max_retries=0, timeout=120)
    assert s.stop() == 0


def test_forced_tool_use_whole_and_streamed(hermes_ac):
    args = dict(model=MODEL_NAME, max_tokens=64, tools=TOOLS,
                tool_choice={"type": "any", "disable_parallel_tool_use": True},
                messages=[{"role": "user", "content": "Weather in Paris?"}], extra_body=GREEDY)
    m = hermes_ac.messages.create(**args)
    assert m.stop_reason == "tool_use", m
    uses = [b for b in m.content if b.type == "tool_use"]
    assert uses and uses[0].name == "get_weather" and uses[0].id.startswith("toolu_")
    assert isinstance(uses[0].input, dict)
    with hermes_ac.messages.stream(**args) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert [b.input for b in final.content if b.type == "tool_use"] == [uses[0].input]
    # The round trip: the call and its result are accepted back.
    back = hermes_ac.messages.create(**{**args, "tool_choice": {"type": "auto"}, "max_tokens": 4,
                                        "messages": args["messages"] + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id,
                                      "content": "21 C"}]}]})
    assert back.type == "message"
