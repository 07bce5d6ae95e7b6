"""Bodies near the size limit: 8 MiB of prose is tokenized in linear time or refused before any
work when it could never fit the context; a client that leaves mid-tokenize costs nothing."""
import json
import socket
import time

import pytest

from conftest import MODEL_NAME, Server, _require_binary_and_model

SENTENCE = ("The quick brown fox jumps over the lazy dog, and then it runs far away into the "
            "green hills where nobody can find it. ")


def _prose(nbytes):
    return (SENTENCE * (nbytes // len(SENTENCE) + 1))[:nbytes]


@pytest.fixture(scope="module")
def big_server():
    _require_binary_and_model()
    s = Server(["--max-body-mib", "9"])
    yield s
    assert s.alive()
    assert s.stop() == 0


def _timed(server, path, body):
    t0 = time.monotonic()
    status, out = server.request("POST", path, body, timeout=120)
    return status, out, time.monotonic() - t0


def test_tokenize_is_linear_up_to_8_mib(big_server):
    times = {}
    for size in (1 << 19, 8 << 20):
        status, out, dt = _timed(big_server, "/tokenize", {"prompt": _prose(size)})
        assert status == 200, out
        assert out["count"] > size // 16
        times[size] = dt
    # 16x the text may cost 16x the time (plus the upload), never 256x.
    per_mib_small = times[1 << 19] / 0.5
    per_mib_big = times[8 << 20] / 8
    assert per_mib_big < 4 * per_mib_small + 0.5, times


def test_chat_and_completion_longer_than_the_context_are_refused_before_tokenizing(big_server):
    text = _prose(8 << 20)
    status, out, dt = _timed(big_server, "/v1/chat/completions", {
        "model": MODEL_NAME, "max_tokens": 2, "messages": [{"role": "user", "content": text}]})
    assert status == 400 and out["error"]["code"] == "context_length_exceeded"
    assert out["error"]["param"] == "messages"
    status, out, _ = _timed(big_server, "/v1/completions",
                            {"model": MODEL_NAME, "max_tokens": 2, "prompt": text})
    assert status == 400 and out["error"]["code"] == "context_length_exceeded"
    assert out["error"]["param"] == "prompt"


def test_client_leaving_mid_tokenize_leaves_the_server_serving(big_server):
    data = json.dumps({"prompt": _prose(8 << 20)}).encode()
    for _ in range(4):
        s = socket.create_connection((big_server.host, big_server.port), timeout=30)
        s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
        s.close()
    status, out = big_server.request("POST", "/v1/chat/completions", {
        "model": MODEL_NAME, "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]})
    assert status == 200, out
    assert big_server.alive()
