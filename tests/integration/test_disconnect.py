"""Clients that drop mid-stream cancel their requests and free their KV."""
import json
import socket
import time

from conftest import MODEL_NAME


def _open_stream(server, prompt, max_tokens):
    """Starts a streamed completion on a raw socket and returns it after the first token arrives."""
    body = json.dumps({"model": MODEL_NAME, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "stream": True}).encode()
    s = socket.create_connection((server.host, server.port), timeout=60)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while b'"text"' not in got:
        chunk = s.recv(4096)
        assert chunk, "the server closed the stream early"
        got += chunk
    assert b" 200 " in got.split(b"\r\n", 1)[0]
    return s


def test_disconnect_mid_stream_cancels_and_frees_kv(server, client):
    # Uncancelled, these streams would each grow to ~2000 tokens of KV and keep every decode slot
    # busy for minutes; together they need several times the whole pool. The follow-up request
    # can only finish promptly if every dropped stream was cancelled and its blocks freed.
    capacity = (server.kv_blocks or 512) * 16
    per_stream = 2000
    rounds = max(10, 3 * capacity // per_stream)
    for i in range(rounds):
        s = _open_stream(server, f"Story number {i} begins here:", per_stream)
        s.close()
    assert server.alive()
    assert server.request("GET", "/health")[0] == 200
    t0 = time.monotonic()
    r = client.completions.create(model=MODEL_NAME, prompt="Hello", max_tokens=4, temperature=0)
    assert r.usage.completion_tokens == 4
    assert time.monotonic() - t0 < 20, "cancelled streams still hold the engine"


def test_disconnect_with_rst(server, client):
    s = _open_stream(server, "Once upon a time", 1000)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()  # an abortive close: RST instead of FIN
    r = client.chat.completions.create(model=MODEL_NAME, max_tokens=3, temperature=0,
                                       messages=[{"role": "user", "content": "Hi"}])
    assert r.choices[0].finish_reason in ("stop", "length")
