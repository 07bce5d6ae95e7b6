"""One conversation sent as Chat Completions, Responses and Anthropic Messages renders the same
prompt and, with the same seed, gives the same tokens."""
import json

import anthropic
import pytest

from conftest import MODEL_NAME

SYSTEM = "You are terse."
USER = "Weather in Paris?"
ARGS = {"city": "Paris"}
RESULT = "21 C and sunny"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
SAMPLING = {"temperature": 0.9, "top_p": 0.95, "seed": 1234}


def chat_body(tools):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    body = {"model": MODEL_NAME, "max_tokens": 12, **SAMPLING}
    if tools:
        messages += [{"role": "assistant", "content": "", "tool_calls": [
                          {"id": "call_1", "type": "function",
                           "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}]},
                     {"role": "tool", "tool_call_id": "call_1", "content": RESULT}]
        body["tools"] = [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather now.", "parameters": SCHEMA}}]
    return {**body, "messages": messages}


def responses_body(tools):
    items = [{"type": "message", "role": "user", "content": USER}]
    body = {"model": MODEL_NAME, "instructions": SYSTEM, "max_output_tokens": 12, **SAMPLING}
    if tools:
        items += [{"type": "function_call", "call_id": "call_1", "name": "get_weather",
                   "arguments": json.dumps(ARGS)},
                  {"type": "function_call_output", "call_id": "call_1", "output": RESULT}]
        body["tools"] = [{"type": "function", "name": "get_weather", "description": "Weather now.",
                          "parameters": SCHEMA}]
    return {**body, "input": items}


def messages_body(tools):
    messages = [{"role": "user", "content": USER}]
    body = {"model": MODEL_NAME, "system": SYSTEM, "max_tokens": 12, **SAMPLING}
    if tools:
        messages += [{"role": "assistant", "content": [
                          {"type": "tool_use", "id": "call_1", "name": "get_weather",
                           "input": ARGS}]},
                     {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": "call_1", "content": RESULT}]}]
        body["tools"] = [{"name": "get_weather", "description": "Weather now.",
                          "input_schema": SCHEMA}]
    return {**body, "messages": messages}


@pytest.mark.parametrize("tools", [False, True], ids=["plain", "tool-round-trip"])
def test_three_apis_same_prompt_same_tokens(server, tools):
    s, chat = server.request("POST", "/v1/chat/completions", chat_body(tools))
    assert s == 200, chat
    s, resp = server.request("POST", "/v1/responses", responses_body(tools))
    assert s == 200, resp
    s, msg = server.request("POST", "/v1/messages", messages_body(tools))
    assert s == 200, msg
    prompt = chat["usage"]["prompt_tokens"]
    assert resp["usage"]["input_tokens"] == prompt
    assert msg["usage"]["input_tokens"] + msg["usage"]["cache_read_input_tokens"] == prompt
    s, tok = server.request("POST", "/tokenize", {"model": MODEL_NAME,
                                                  "messages": chat_body(tools)["messages"]})
    assert s == 200 and tok["count"] == prompt
    text = chat["choices"][0]["message"]["content"]
    assert text and chat["usage"]["completion_tokens"] == resp["usage"]["output_tokens"]
    assert "".join(c["text"] for it in resp["output"] if it["type"] == "message"
                   for c in it["content"]) == text
    assert "".join(b["text"] for b in msg["content"] if b["type"] == "text") == text
    assert msg["usage"]["output_tokens"] == chat["usage"]["completion_tokens"]
