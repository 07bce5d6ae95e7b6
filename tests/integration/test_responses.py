"""The Responses API over HTTP and SSE through the official openai SDK against the real server,
every body and streamed event validated against the Open Responses schemas."""
import http.client
import json

import openai
import pytest

from conftest import MODEL_NAME
from responses_schema import check_stream, validate

INPUT = "Name three colors."


def post(server, body):
    return server.request("POST", "/v1/responses", body)


def sse_events(server, body):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        conn.request("POST", "/v1/responses", json.dumps({**body, "stream": True}),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        assert resp.getheader("Content-Type") == "text/event-stream"
        events, name = [], None
        for raw in resp.read().decode().split("\n"):
            if raw.startswith("event: "):
                name = raw[7:]
            elif raw.startswith("data: "):
                e = json.loads(raw[6:])
                assert e["type"] == name
                events.append(e)
        return events
    finally:
        conn.close()


def text_of(response):
    return "".join(c["text"] for it in response["output"] if it["type"] == "message"
                   for c in it["content"])


def test_whole_response_validates(server):
    status, r = post(server, {"model": MODEL_NAME, "input": INPUT, "max_output_tokens": 8,
                              "temperature": 0, "metadata": {"k": "v"}})
    assert status == 200, r
    validate(r, "ResponseResource")
    assert r["id"].startswith("resp_") and r["object"] == "response"
    assert r["status"] in ("completed", "incomplete") and r["metadata"] == {"k": "v"}
    assert r["output"][0]["type"] == "message" and text_of(r)
    u = r["usage"]
    assert u["input_tokens"] > 5 and 0 < u["output_tokens"] <= 8
    assert u["total_tokens"] == u["input_tokens"] + u["output_tokens"]
    assert u["input_tokens_details"]["cached_tokens"] >= 0
    assert u["output_tokens_details"]["reasoning_tokens"] == 0


def test_max_output_tokens_is_incomplete(server):
    status, r = post(server, {"model": MODEL_NAME, "input": INPUT, "max_output_tokens": 2})
    assert status == 200
    validate(r, "ResponseResource")
    assert r["status"] == "incomplete"
    assert r["incomplete_details"] == {"reason": "max_output_tokens"}
    events = sse_events(server, {"model": MODEL_NAME, "input": INPUT, "max_output_tokens": 2})
    check_stream(events)
    assert events[-1]["type"] == "response.incomplete"


def test_sse_events_validate_and_match_the_whole_reply(server):
    body = {"model": MODEL_NAME, "input": INPUT, "max_output_tokens": 12, "temperature": 0}
    _, whole = post(server, body)
    events = sse_events(server, body)
    check_stream(events)
    streamed = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert streamed == text_of(whole) == text_of(events[-1]["response"])
    assert events[-1]["response"]["usage"]["output_tokens"] == whole["usage"]["output_tokens"]


def test_sdk_create_stream_retrieve_input_items_delete(client):
    # The SDK's stream helper wants a completed (not incomplete) response: a short reply.
    r = client.responses.create(model=MODEL_NAME, input="Say hi.", max_output_tokens=64,
                                temperature=0, instructions="Be brief.")
    assert r.status == "completed" and r.output_text and r.instructions == "Be brief."
    with client.responses.stream(model=MODEL_NAME, input="Say hi.", max_output_tokens=64,
                                 temperature=0, instructions="Be brief.") as stream:
        deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert deltas == final.output_text == r.output_text
    got = client.responses.retrieve(r.id)
    assert got.id == r.id and got.output_text == r.output_text
    items = client.responses.input_items.list(r.id)
    assert [i.type for i in items.data] == ["message"] and items.data[0].role == "user"
    client.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)


def test_previous_response_chain_resumes_from_the_cache(client, server):
    r1 = client.responses.create(model=MODEL_NAME, input="My name is Ada. Say hello to me.",
                                 max_output_tokens=12, temperature=0)
    r2 = client.responses.create(model=MODEL_NAME, previous_response_id=r1.id,
                                 input="What is my name?", max_output_tokens=8, temperature=0)
    assert r2.previous_response_id == r1.id
    assert r2.usage.input_tokens > r1.usage.input_tokens + r1.usage.output_tokens
    assert r2.usage.input_tokens_details.cached_tokens > 0
    # Not stored: not retrievable, and not a previous response either.
    r3 = client.responses.create(model=MODEL_NAME, input=INPUT, max_output_tokens=2, store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r3.id)
    status, e = post(server, {"model": MODEL_NAME, "input": "x", "previous_response_id": r3.id})
    assert status == 400 and e["error"]["code"] == "previous_response_not_found"
    assert e["error"]["param"] == "previous_response_id"


TOOLS = [{"type": "function", "name": "get_weather", "description": "Current weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
CALL = [{"type": "message", "role": "user", "content": [{"type": "input_text",
                                                         "text": "Weather in Paris?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": "{\"city\": \"Paris\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "21 C"}]


def test_function_call_round_trip(server, client):
    status, r = post(server, {"model": MODEL_NAME, "input": CALL, "tools": TOOLS,
                              "max_output_tokens": 6, "temperature": 0})
    assert status == 200, r
    validate(r, "ResponseResource")
    assert r["tools"][0]["name"] == "get_weather"
    items = client.responses.input_items.list(r["id"], order="asc")
    assert [i.type for i in items.data] == ["message", "function_call", "function_call_output"]
    assert all(i.id for i in items.data)
    status, e = post(server, {"model": MODEL_NAME, "tools": TOOLS, "input": [
        CALL[0], {**CALL[2], "call_id": "call_unknown"}]})
    assert status == 400 and e["error"]["param"] == "input[1].call_id", e


def test_output_controls_are_honoured_or_refused_by_name(server):
    for extra, field in [({"reasoning": {"effort": "medium"}}, "reasoning.effort"),
                         ({"text": {"format": {"type": "json_object"}}}, "text.format"),
                         ({"tool_choice": "required", "tools": TOOLS}, "tool_choice")]:
        status, r = post(server, {"model": MODEL_NAME, "input": INPUT, "max_output_tokens": 4,
                                  **extra})
        if status == 200:
            validate(r, "ResponseResource")
        else:
            assert status == 400 and r["error"]["param"] == field, r


BAD = [
    ({"input": 5}, "input"),
    ({"input": [{"type": "image_generation_call"}]}, "input[0].type"),
    ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "input[0].role"),
    ({"input": [{"type": "message", "role": "user", "content": [{"type": "input_image",
                                                                "image_url": "x"}]}]},
     "input[0].content[0]"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, "input[0].arguments"),
    ({"instructions": 3}, "instructions"),
    ({"tools": {}}, "tools"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"tool_choice": 3}, "tool_choice"),
    ({"tool_choice": "sometimes"}, "tool_choice"),
    ({"parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"max_output_tokens": "8"}, "max_output_tokens"),
    ({"temperature": 3}, "temperature"),
    ({"top_p": "x"}, "top_p"),
    ({"reasoning": "high"}, "reasoning"),
    ({"reasoning": {"effort": "enormous"}}, "reasoning.effort"),
    ({"reasoning": {"summary": "detailed"}}, "reasoning.summary"),
    ({"text": {"format": {"type": "xml"}}}, "text.format.type"),
    ({"text": {"verbosity": "high"}}, "text.verbosity"),
    ({"metadata": {"k": 1}}, "metadata.k"),
    ({"store": "no"}, "store"),
    ({"previous_response_id": 5}, "previous_response_id"),
    ({"user": 5}, "user"),
    ({"stream": "yes"}, "stream"),
    ({"truncation": "auto"}, "truncation"),
    ({"background": True}, "background"),
    ({"include": ["reasoning.encrypted_content"]}, "include"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"prompt": {"id": "p"}}, "prompt"),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"max_tool_calls": 2}, "max_tool_calls"),
    ({"stream_options": {"include_obfuscation": False}}, "stream_options"),
    ({"frobnicate": 1}, "frobnicate"),
]


@pytest.mark.parametrize("extra,field", BAD, ids=[f for _, f in BAD])
def test_bad_and_unsupported_fields_are_400s_naming_them(server, extra, field):
    status, e = post(server, {"model": MODEL_NAME, "input": INPUT, **extra})
    assert status == 400, e
    assert e["error"]["type"] == "invalid_request_error" and e["error"]["param"] == field, e


def test_not_found_routes_and_refused_then_good_on_one_connection(server):
    assert server.request("GET", "/v1/responses/resp_nope")[0] == 404
    assert server.request("DELETE", "/v1/responses/resp_nope")[0] == 404
    assert server.request("GET", "/v1/responses/resp_nope/input_items")[0] == 404
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        for body, want in [({"model": MODEL_NAME, "input": INPUT, "background": True}, 400),
                           ({"model": MODEL_NAME, "input": INPUT, "max_output_tokens": 2}, 200)]:
            conn.request("POST", "/v1/responses", json.dumps(body),
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = json.loads(resp.read())
            assert resp.status == want, data
        validate(data, "ResponseResource")
    finally:
        conn.close()


@pytest.fixture(scope="module")
def hermes():
    """A server that parses Hermes tool calls, so a forced call comes back as a function_call."""
    from conftest import Server
    s = Server(["--tool-parser", "hermes", "--parallel", "2"])
    yield s
    assert s.stop() == 0


def test_forced_call_streams_function_call_items_that_validate(hermes):
    body = {"model": MODEL_NAME, "input": "Weather in Paris?", "tools": TOOLS,
            "tool_choice": "required", "parallel_tool_calls": False, "max_output_tokens": 64,
            "temperature": 0}
    status, whole = post(hermes, body)
    assert status == 200, whole
    validate(whole, "ResponseResource")
    assert whole["status"] == "completed"
    calls = [it for it in whole["output"] if it["type"] == "function_call"]
    assert calls and calls[0]["name"] == "get_weather" and calls[0]["status"] == "completed"
    json.loads(calls[0]["arguments"])
    events = sse_events(hermes, body)
    check_stream(events)
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" in kinds
    args = "".join(e["delta"] for e in events
                   if e["type"] == "response.function_call_arguments.delta")
    assert args == calls[0]["arguments"]
    # The call's answer continues the chain from the store.
    status, nxt = post(hermes, {"model": MODEL_NAME, "previous_response_id": whole["id"],
                                "tools": TOOLS, "max_output_tokens": 4, "input": [
                                    {"type": "function_call_output",
                                     "call_id": calls[0]["call_id"], "output": "21 C"}]})
    assert status == 200, nxt
    validate(nxt, "ResponseResource")
