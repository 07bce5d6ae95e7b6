"""Everyday requests as real clients send them, and HTTP details (models by id, HEAD, OPTIONS and
CORS, auth schemes, reply ids) against the real binary."""
import http.client
import json

import openai
import pytest

from conftest import MODEL_NAME, Server, _require_binary_and_model


def _raw(server, method, path, headers=None, body=None):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def _chat(client, messages, **kw):
    return client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=4,
                                          temperature=0, **kw)


def test_content_as_text_parts_renders_like_the_joined_string(client):
    parts = [{"type": "text", "text": "What is the capital"}, {"type": "text", "text": "of France?"}]
    a = _chat(client, [{"role": "user", "content": parts}])
    b = _chat(client, [{"role": "user", "content": "What is the capital\nof France?"}])
    assert a.choices[0].message.content == b.choices[0].message.content
    assert a.usage.prompt_tokens == b.usage.prompt_tokens


def test_assistant_tool_call_turn_with_null_or_missing_content(client):
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
    for turn in ({"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "assistant", "tool_calls": [call]}):
        r = _chat(client, [{"role": "user", "content": "Weather in Paris?"}, turn,
                           {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}])
        assert r.choices[0].finish_reason in ("stop", "length")


def test_user_message_without_content_names_the_field(client):
    with pytest.raises(openai.BadRequestError) as e:
        _chat(client, [{"role": "user"}])
    assert e.value.param == "messages[0].content"
    assert "template" not in str(e.value.message).lower()


def test_image_parts_are_refused_naming_vision(client):
    with pytest.raises(openai.BadRequestError) as e:
        _chat(client, [{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}])
    assert e.value.param == "messages[0].content[1]"
    assert "vision" in e.value.message


def test_developer_role_renders_as_system(server):
    def count(role):
        status, body = server.request("POST", "/tokenize", {"messages": [
            {"role": role, "content": "Be brief."}, {"role": "user", "content": "Hi"}]})
        assert status == 200, body
        return body["tokens"]
    assert count("developer") == count("system")


def test_name_is_passed_through(client):
    r = _chat(client, [{"role": "user", "name": "alice", "content": "Hi"}])
    assert r.choices[0].finish_reason in ("stop", "length")


def test_model_by_id(server, client):
    m = client.models.retrieve(MODEL_NAME)
    assert m.id == MODEL_NAME and m.object == "model"
    assert client.models.retrieve("smol").id == "smol"  # an alias
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-17")


def test_head_and_methods_on_health(server):
    status, headers, body = _raw(server, "HEAD", "/health")
    assert status == 200 and body == b""
    assert int(headers["Content-Length"]) == len(_raw(server, "GET", "/health")[2])
    status, headers, body = _raw(server, "POST", "/health", body=b"{}")
    assert status == 405 and "GET" in json.loads(body)["error"]["message"]
    assert _raw(server, "DELETE", "/v1/models")[0] == 405


def test_options_without_cors_lists_methods_but_allows_no_origin(server):
    status, headers, body = _raw(server, "OPTIONS", "/v1/chat/completions",
                                 {"Origin": "https://app.example",
                                  "Access-Control-Request-Method": "POST"})
    assert status == 204 and body == b""
    assert "POST" in headers["Allow"]
    assert "Access-Control-Allow-Origin" not in headers


def test_cors_allows_only_the_listed_origins():
    _require_binary_and_model()
    s = Server(["--cors", "https://app.example,https://other.example", "--api-key", "k"])
    try:
        pre = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization, content-type"}
        status, headers, _ = _raw(s, "OPTIONS", "/v1/chat/completions", pre)
        assert status == 204  # preflights carry no key
        assert headers["Access-Control-Allow-Origin"] == "https://app.example"
        assert "POST" in headers["Access-Control-Allow-Methods"]
        assert "authorization" in headers["Access-Control-Allow-Headers"]
        status, headers, _ = _raw(s, "GET", "/v1/models", {"Origin": "https://app.example",
                                                           "Authorization": "Bearer k"})
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "https://app.example"
        status, headers, _ = _raw(s, "GET", "/v1/models", {"Origin": "https://evil.example",
                                                           "Authorization": "Bearer k"})
        assert status == 200 and "Access-Control-Allow-Origin" not in headers
    finally:
        assert s.stop() == 0


def test_bearer_scheme_is_case_insensitive():
    _require_binary_and_model()
    s = Server(["--api-key", "secret"])
    try:
        for scheme in ("Bearer", "bearer", "BEARER"):
            assert _raw(s, "GET", "/v1/models", {"Authorization": f"{scheme} secret"})[0] == 200
        assert _raw(s, "GET", "/v1/models", {"Authorization": "bearer wrong"})[0] == 401
        assert _raw(s, "GET", "/v1/models", {"Authorization": "Basic secret"})[0] == 401
    finally:
        assert s.stop() == 0


def test_reply_ids_differ_across_restarts():
    _require_binary_and_model()
    ids = []
    for _ in range(2):
        s = Server()
        try:
            c = openai.OpenAI(base_url=s.url, api_key="x", max_retries=0)
            ids.append(_chat(c, [{"role": "user", "content": "Hi"}]).id)
        finally:
            assert s.stop() == 0
    assert ids[0] != ids[1]


def test_completions_context_error_names_prompt(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL_NAME, prompt="hello " * 3000, max_tokens=2)
    assert e.value.code == "context_length_exceeded" and e.value.param == "prompt"
