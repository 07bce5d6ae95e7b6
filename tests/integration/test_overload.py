"""Refusals for capacity in each API's own envelope, at every level the server refuses: requests
over --max-active-requests and connections over --max-connections get Anthropic's 529
overloaded_error on /v1/messages (the official `anthropic` SDK raises OverloadedError) and the
503 OpenAI envelope on OpenAI's routes (the `openai` SDK's InternalServerError); a body over the
limit on /v1/messages is Anthropic's 413 request_too_large. Each is followed by a good request."""
import json
import socket

import anthropic
import openai
import pytest

from conftest import Server

MESSAGES = dict(model="smollm2", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
CHAT = dict(model="smollm2", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])


def clients(s):
    ac = anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key="unused", max_retries=0)
    oc = openai.OpenAI(base_url=s.url, api_key="unused", max_retries=0)
    return ac, oc


def hold_a_stream(s):
    """A long streamed chat reply, its first chunk read: it keeps a request (and a connection)
    busy until closed."""
    oc = openai.OpenAI(base_url=s.url, api_key="unused", max_retries=0)
    stream = oc.chat.completions.create(model="smollm2", max_tokens=1800, stream=True,
                                        extra_body={"ignore_eos": True},
                                        messages=[{"role": "user", "content": "Count to 1000."}])
    next(iter(stream))
    return stream


def check_refusals(s, ac, oc):
    with pytest.raises(anthropic.OverloadedError) as e:
        ac.messages.create(**MESSAGES)
    assert e.value.status_code == 529
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "overloaded_error"
    assert e.value.body["error"]["message"] and e.value.response.headers["retry-after"] == "1"
    with pytest.raises(openai.InternalServerError) as e:
        oc.chat.completions.create(**CHAT)
    assert e.value.status_code == 503 and e.value.body["code"] == "overloaded"
    assert e.value.body["type"] == "server_error" and e.value.response.headers["retry-after"] == "1"
    with pytest.raises(openai.InternalServerError) as e:
        oc.responses.create(model="smollm2", input="Hi", max_output_tokens=4)
    assert e.value.status_code == 503 and e.value.body["code"] == "overloaded"


def served(call, refusal):
    """The call's result once the server has noticed a freed slot: a cancel lands within a step
    and a closed connection when the server reads its end."""
    for _ in range(100):
        try:
            return call()
        except refusal:
            pass
    return call()


@pytest.mark.parametrize("limit", [["--max-active-requests", "1"], ["--max-connections", "1"]])
def test_capacity_refusals_use_each_apis_envelope(limit):
    s = Server(limit)
    try:
        stream = hold_a_stream(s)
        ac, oc = clients(s)
        check_refusals(s, ac, oc)
        stream.close()  # the client leaves: its request is cancelled and its slot freed
        reply = served(lambda: ac.messages.create(**MESSAGES), anthropic.OverloadedError)
        assert reply.type == "message" and reply.content
        ac.close()  # its kept-alive connection would hold the one slot of --max-connections 1
        reply = served(lambda: oc.chat.completions.create(**CHAT), openai.InternalServerError)
        assert reply.choices[0].message.content is not None
    finally:
        assert s.stop() == 0


def refused_head(s, path):
    """A POST whose Content-Length is over --max-body-mib 1: the server refuses after the head,
    before any of the body is sent."""
    c = socket.create_connection((s.host, s.port), timeout=30)
    c.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {2 << 20}\r\n\r\n".encode())
    data = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    c.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], json.loads(body)


def test_body_over_the_limit_on_messages_is_anthropics_413(server):
    status, body = refused_head(server, "/v1/messages")
    assert status == b"HTTP/1.1 413 Payload Too Large"
    assert body["type"] == "error" and body["error"]["type"] == "request_too_large"
    status, body = refused_head(server, "/v1/chat/completions")
    assert status == b"HTTP/1.1 413 Payload Too Large" and body["error"]["code"] == "request_too_large"
    ac, _ = clients(server)
    assert ac.messages.create(**MESSAGES).type == "message"
