"""A barrage of 500+ malformed bodies: every reply is a 4xx JSON error, and the server lives on."""
import http.client
import json
import random
import socket

from conftest import MODEL_NAME

GOOD_CHAT = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "Hi"}],
             "max_tokens": 2, "temperature": 0}
GOOD_COMPLETION = {"model": MODEL_NAME, "prompt": "Hi", "max_tokens": 2, "temperature": 0}
JUNK = ['"\\ud800"', "1e999", "-1e999", "NaN", "Infinity", "-Infinity", "[1,\"a\",null]",
        "[[[[1]]]]", '{"a":{"b":{}}}']
NUMBER_BAD = ['"x"', "1e308", "-1e308", "99999999999999999999999999", "[]", "{}", "true",
              '"0.5"'] + JUNK
INTEGER_BAD = ['"x"', "3.5", "18446744073709551616", "-9223372036854775809", "[]", "{}",
               "true", '"1"'] + JUNK
BOOL_BAD = ['"x"', "1", "0", "[]", "{}", '"true"'] + JUNK
# (field, invalid values) for both endpoints, then per endpoint.
COMMON = [(f, NUMBER_BAD) for f in ("temperature", "top_p", "min_p", "presence_penalty",
                                     "frequency_penalty", "repetition_penalty")] + [
    ("max_tokens", INTEGER_BAD + ["0", "-1", "123456789012"]),
    ("top_k", INTEGER_BAD + ["-2"]),
    ("seed", INTEGER_BAD),
    ("n", INTEGER_BAD + ["2", "0"]),
    ("stream", BOOL_BAD), ("ignore_eos", BOOL_BAD),
    ("model", ["5", "[]", "{}", "true", '"no-such-model"'] + JUNK),
    ("stop", ["5", "[1]", "{}", "true", "[null]", "[[]]", "[" + ",".join(['"a"'] * 17) + "]"]
     + JUNK),
    ("user", ["5", "[]", "{}", "true"] + JUNK),
    ("stream_options", ['{"include_usage": true}', "5", '"x"', "[]", "{}"] + JUNK),
    ("logit_bias", ["5", '"x"', "[]", '{"a": 1}', '{"1": "x"}', '{"1": 1e308}', '{"-1": 1}',
                    '{"99999999999": 1}'] + JUNK),
]
CHAT_ONLY = [
    ("max_completion_tokens", INTEGER_BAD + ["0"]),
    ("logprobs", BOOL_BAD), ("add_generation_prompt", BOOL_BAD),
    ("top_logprobs", INTEGER_BAD + ["3", "21"]),
    ("chat_template_kwargs", ["5", '"x"', "[]", "true"] + JUNK[:-1]),
    ("tools", ["5", '"x"', "[5]", "[{}]", '[{"function": 5}]', '[{"function": {}}]'] + JUNK),
    ("messages", ["5", '"x"', "[]", "{}", "[5]", "[{}]", '[{"role": 5}]',
                  '[{"role": "x", "content": "y"}]', '[{"role": "user", "content": 5}]',
                  '[{"role": "user", "content": [5]}]',
                  '[{"role": "user", "content": [{"type": "image_url"}]}]',
                  '[{"role": "user", "content": [{"type": "text"}]}]',
                  '[{"role": "assistant", "tool_calls": 5}]',
                  '[{"role": "assistant", "tool_calls": [5]}]'] + JUNK),
]
COMPLETION_ONLY = [
    ("echo", BOOL_BAD),
    ("logprobs", INTEGER_BAD + ["21", "-1"]),
    ("suffix", ['"x"', "5"]),
    ("best_of", ["2", '"x"', "[]"]),
    ("prompt", ["5", "{}", "[]", "[true]", "[-1]", "[1.5]", '["a", "b"]', '["a", [1]]',
                "[[1], [2]]", "[999999999]", '""', "[{}]", "null"] + JUNK),
]


def malformed_bodies():
    """(path, body bytes, content type) triples; every one must be refused with a 4xx."""
    rng = random.Random(1234)
    out = []
    paths = ["/v1/chat/completions", "/v1/completions"]
    for good, path in ((GOOD_CHAT, paths[0]), (GOOD_COMPLETION, paths[1])):
        text = json.dumps(good).encode()
        for cut in range(0, len(text) - 1, 3):  # truncated JSON
            out.append((path, text[:cut], "application/json"))
        out.append((path, text.replace(b"}", b"", 1), "text/plain"))  # wrong content type too
        fields = COMMON + (CHAT_ONLY if path == paths[0] else COMPLETION_ONLY)
        for field, values in fields:
            for v in values:
                body = {k: x for k, x in good.items() if k != field}
                raw = json.dumps(body)[:-1] + f', "{field}": {v}}}'
                out.append((path, raw.encode(), "application/json"))
    for path in paths:
        required = "messages" if "chat" in path else "prompt"
        base = GOOD_CHAT if "chat" in path else GOOD_COMPLETION
        out += [
            (path, b"", "application/json"),
            (path, b"null", "application/json"),
            (path, b"[]", "application/json"),
            (path, b"42", "application/json"),
            (path, b'"string"', "application/json"),
            (path, b"{", "application/json"),
            (path, b"{}", "application/json"),
            (path, b"[" * 100_000, "application/json"),
            (path, b"[" * 100_000 + b"]" * 100_000, "application/json"),
            (path, b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "application/json"),
            (path, json.dumps({**base, "stop": ["x"] * 100_000}).encode(), "application/json"),
            (path, json.dumps({**base, required: [[1] * 10] * 20_000}).encode(),
             "application/json"),
            (path, b'{"model": "\xff\xfe", "' + required.encode() + b'": "\xc3\x28"}',
             "application/json"),
            (path, b'{"' + required.encode() + b'": "\xed\xa0\x80"}', "application/json"),
            (path, b"\xef\xbb\xbf\x00\x00\x00", "application/json"),
            (path, b"{\"model\": NaN}", "application/json"),
            (path, b"{'model': 'single quotes'}", "application/json"),
            (path, b"{\"a\":1,}", "application/json"),
            (path, b"{\"max_tokens\": 1e99999}", "application/json"),
            (path, b"<xml/>", "application/xml"),
            (path, b"a=1&b=2", "application/x-www-form-urlencoded"),
        ]
        for _ in range(40):  # random byte noise
            out.append((path, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))),
                        "application/json"))
    for path in ("/tokenize", "/detokenize"):
        out += [(path, b"{", "application/json"), (path, b'{"tokens": "x"}', "application/json"),
                (path, b'{"prompt": 5}', "application/json"), (path, b"[]", "application/json")]
    return out


def _check_error(status, data, what):
    assert 400 <= status < 500, f"{what}: status {status}: {data[:200]!r}"
    body = json.loads(data)
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], what
    assert "type" in body["error"], what


def test_malformed_barrage(server):
    bodies = malformed_bodies()
    assert len(bodies) >= 500, len(bodies)
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    for i, (path, body, ctype) in enumerate(bodies):
        what = f"#{i} {path} {body[:80]!r}"
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": ctype})
            resp = conn.getresponse()
            data = resp.read()
        except (http.client.HTTPException, ConnectionError):
            conn.close()  # the server may close after an error; reconnect and retry once
            conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
            conn.request("POST", path, body=body, headers={"Content-Type": ctype})
            resp = conn.getresponse()
            data = resp.read()
        _check_error(resp.status, data, what)
        if resp.will_close:
            conn.close()
            conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    conn.close()
    assert server.alive()
    status, body = server.request("POST", "/v1/chat/completions", GOOD_CHAT)
    assert status == 200 and body["choices"][0]["finish_reason"] in ("stop", "length")
    status, body = server.request("POST", "/v1/completions", GOOD_COMPLETION)
    assert status == 200


def test_oversize_body_is_413(server):
    body = b'{"prompt": "' + b"a" * (2 << 20) + b'"}'  # 2 MiB > --max-body-mib 1
    s = socket.create_connection((server.host, server.port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    try:
        s.sendall(body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may answer and close before reading it all
    data = b""
    try:
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    s.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), data[:300]
    assert json.loads(payload)["error"]["message"]
    assert server.request("GET", "/health")[0] == 200


def test_unknown_route_and_method(server):
    status, body = server.request("GET", "/v1/nope")
    assert status == 404 and body["error"]["message"]
    status, body = server.request("GET", "/v1/chat/completions")
    assert status == 405 and body["error"]["message"]
