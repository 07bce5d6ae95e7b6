"""--api-key-file: named and bare keys, 401s in each API's envelope, per-key counters, --metrics-open,
and SIGHUP reloading the file (old key refused, new key accepted, an open stream unaffected)."""
import http.client
import json
import signal
import time

import pytest

from conftest import MODEL_NAME, Server, _require_binary_and_model


def metric(s, name, headers=None, **labels):
    status, text = s.request("GET", "/metrics", headers=headers)
    assert status == 200, text
    total = 0.0
    for line in text.decode().splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def completion(s, key, max_tokens=4):
    return s.request("POST", "/v1/completions",
                     {"model": MODEL_NAME, "prompt": "Hi", "max_tokens": max_tokens,
                      "temperature": 0, "ignore_eos": True}, headers=bearer(key))


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    _require_binary_and_model()
    keys = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys.write_text("# the team\nalice:sk-alice\nsk-bare\n")
    s = Server(["--api-key-file", str(keys), "--parallel", "4"])
    s.keys = keys
    yield s
    assert s.stop() == 0


def test_keys_and_envelopes(keyed):
    assert completion(keyed, "sk-alice")[0] == 200
    assert completion(keyed, "sk-bare")[0] == 200
    status, body = completion(keyed, "sk-wrong")
    assert status == 401
    assert body["error"]["type"] == "authentication_error"
    assert body["error"]["code"] == "invalid_api_key"
    # Anthropic's envelope on the Messages route, x-api-key accepted there.
    status, body = keyed.request("POST", "/v1/messages",
                                 {"model": MODEL_NAME, "max_tokens": 2,
                                  "messages": [{"role": "user", "content": "Hi"}]},
                                 headers={"x-api-key": "nope", "anthropic-version": "2023-06-01"})
    assert status == 401
    assert body == {"type": "error", "error": {"type": "authentication_error",
                                               "message": body["error"]["message"]}}
    status, _ = keyed.request("POST", "/v1/messages",
                              {"model": MODEL_NAME, "max_tokens": 2,
                               "messages": [{"role": "user", "content": "Hi"}]},
                              headers={"x-api-key": "sk-alice", "anthropic-version": "2023-06-01"})
    assert status == 200
    # Health stays open; /metrics and /stats need a key (no --metrics-open).
    assert keyed.request("GET", "/health")[0] == 200
    assert keyed.request("GET", "/metrics")[0] == 401
    assert keyed.request("GET", "/stats")[0] == 401
    assert keyed.request("GET", "/stats", headers=bearer("sk-bare"))[0] == 200


def test_per_key_counters(keyed):
    auth = bearer("sk-alice")
    before_req = metric(keyed, "tensorfold:api_key_requests_total", auth, key="alice")
    before_gen = metric(keyed, "tensorfold:api_key_generation_tokens_total", auth, key="alice")
    for _ in range(3):
        status, body = completion(keyed, "sk-alice", 5)
        assert status == 200 and body["usage"]["completion_tokens"] == 5
    # The two scrapes above count too (each after it answered): they were let in by alice's key.
    assert metric(keyed, "tensorfold:api_key_requests_total", auth, key="alice") == before_req + 5
    assert metric(keyed, "tensorfold:api_key_generation_tokens_total", auth, key="alice") == \
        before_gen + 15
    # A bare key is named by its digest's first 8 hex digits, never by the key itself.
    _, text = keyed.request("GET", "/metrics", headers=auth)
    assert 'key="sha256:' in text.decode() and "sk-bare" not in text.decode()


def test_metrics_open_lets_prometheus_in(tmp_path):
    _require_binary_and_model()
    keys = tmp_path / "keys.txt"
    keys.write_text("ops:sk-ops\n")
    s = Server(["--api-key-file", str(keys), "--metrics-open"])
    try:
        assert s.request("GET", "/metrics")[0] == 200
        assert s.request("GET", "/stats")[0] == 200
        assert completion(s, "wrong")[0] == 401  # the API itself stays closed
    finally:
        assert s.stop() == 0


def test_sighup_reload_keeps_open_streams(keyed):
    conn = http.client.HTTPConnection(keyed.host, keyed.port, timeout=60)
    conn.request("POST", "/v1/completions",
                 body=json.dumps({"model": MODEL_NAME, "prompt": "Once upon a time",
                                  "max_tokens": 120, "temperature": 0, "ignore_eos": True,
                                  "stream": True, "stream_options": {"include_usage": True}}),
                 headers={"Content-Type": "application/json", **bearer("sk-alice")})
    resp = conn.getresponse()
    assert resp.status == 200
    first = resp.readline()
    while not first.startswith(b"data: "):
        first = resp.readline()

    keyed.keys.write_text("carol:sk-carol\n")
    keyed.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while completion(keyed, "sk-alice", 1)[0] != 401:
        assert time.monotonic() < deadline, "the old key is still accepted"
        time.sleep(0.05)
    assert completion(keyed, "sk-carol", 1)[0] == 200
    assert completion(keyed, "sk-bare", 1)[0] == 401

    # The stream begun with the old key runs to its end on the same connection.
    events = [first]
    for line in resp:
        if line.startswith(b"data: "):
            events.append(line)
    conn.close()
    assert events[-1].strip() == b"data: [DONE]"
    usage = [json.loads(e[6:]) for e in events[:-1]]
    assert usage[-1]["usage"]["completion_tokens"] == 120
    assert keyed.alive()

    # A bad file keeps the keys that were active.
    keyed.keys.write_text("nameonly:\n")
    keyed.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    assert completion(keyed, "sk-carol", 1)[0] == 200
    assert "keeping the old keys" in keyed.output()
