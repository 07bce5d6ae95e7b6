"""JSON nested 22,000 and 100,000 deep in every field that reaches the chat template (and in the
whole body) is refused with a 400 naming the nesting limit; the server stays up and still chats."""
import pytest

from conftest import MODEL_NAME, Server, _require_binary_and_model

DEPTHS = (22000, 100000)
LIMIT = "512"


def deep_object(depth):
    return '{"a":' * depth + "1" + "}" * depth


def deep_array(depth):
    return "[" * depth + "]" * depth


def user(content="Hi"):
    return '{"role":"user","content":"%s"}' % content


def chat(messages, extra=""):
    return ('{"model":"%s","max_tokens":2,"temperature":0,"messages":[%s]%s}'
            % (MODEL_NAME, messages, extra))


# (name, path, body for a deep JSON value); bodies are built as text: Python's json module would
# itself hit its recursion limit on values this deep.
CASES = [
    ("chat_template_kwargs", "/v1/chat/completions",
     lambda deep: chat(user(), ',"chat_template_kwargs":{"x":%s}' % deep)),
    ("tools_parameters", "/v1/chat/completions",
     lambda deep: chat(user(), ',"tools":[{"type":"function","function":{"name":"f",'
                                '"parameters":%s}}]' % deep)),
    ("message_extra_key", "/v1/chat/completions",
     lambda deep: chat('{"role":"user","content":"Hi","metadata":%s}' % deep)),
    ("tool_call_arguments_object", "/v1/chat/completions",
     lambda deep: chat(user() + ',{"role":"assistant","content":"","tool_calls":[{"id":"c1",'
                       '"type":"function","function":{"name":"f","arguments":%s}}]}' % deep
                       + ',{"role":"tool","tool_call_id":"c1","content":"1"}')),
    ("tokenize_messages", "/tokenize",
     lambda deep: '{"model":"%s","messages":[{"role":"user","content":"Hi","x":%s}]}'
     % (MODEL_NAME, deep)),
    ("top_level_chat", "/v1/chat/completions", lambda deep: deep),
    ("top_level_tokenize", "/tokenize", lambda deep: deep),
    ("top_level_completions", "/v1/completions",
     lambda deep: '{"model":"%s","prompt":"Hi","x":%s}' % (MODEL_NAME, deep)),
]


@pytest.fixture(scope="module")
def deep_server():
    """A server of this module's own, so that a crash here cannot take the shared one down."""
    _require_binary_and_model()
    s = Server()
    yield s
    assert s.alive(), "the server died during the deep-nesting tests"
    assert s.stop() == 0


def assert_normal_chat(server):
    status, body = server.request("POST", "/v1/chat/completions", chat(user()))
    assert status == 200, body
    assert body["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("shape", ["object", "array"])
@pytest.mark.parametrize("name,path,make", CASES, ids=[c[0] for c in CASES])
def test_deep_nesting_is_a_400(deep_server, name, path, make, shape, depth):
    deep = deep_object(depth) if shape == "object" else deep_array(depth)
    status, body = deep_server.request("POST", path, make(deep))
    assert deep_server.alive(), f"{name}: the server died ({deep_server.output()[-2000:]})"
    assert status == 400, (name, status, body)
    assert isinstance(body, dict) and "error" in body, body
    message = body["error"]["message"]
    assert "nesting" in message and LIMIT in message, message
    assert_normal_chat(deep_server)


def test_nesting_within_the_limit_still_works(deep_server):
    # Tool parameters 100 deep are unusual but valid: rendered, not refused.
    status, body = deep_server.request(
        "POST", "/v1/chat/completions",
        chat(user(), ',"tools":[{"type":"function","function":{"name":"f","parameters":%s}}]'
             % deep_object(100)))
    assert status == 200, body
    assert_normal_chat(deep_server)


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_json_inside_tool_call_arguments_string(deep_server, depth):
    # The body itself is shallow; the arguments string holds the deep JSON, which the server
    # parses into an object for the template.
    args = deep_object(depth).replace('"', '\\"')
    body = chat(user() + ',{"role":"assistant","content":"","tool_calls":[{"id":"c1",'
                '"type":"function","function":{"name":"f","arguments":"%s"}}]}' % args
                + ',{"role":"tool","tool_call_id":"c1","content":"1"}')
    status, reply = deep_server.request("POST", "/v1/chat/completions", body)
    assert deep_server.alive(), f"the server died ({deep_server.output()[-2000:]})"
    assert status == 400, (status, reply)
    message = reply["error"]["message"]
    assert "nesting" in message and LIMIT in message, message
    assert_normal_chat(deep_server)
