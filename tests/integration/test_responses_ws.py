"""Responses WebSocket mode (GET /v1/responses upgraded) through the openai SDK's
responses.connect() and a raw websockets client: the same events as SSE, token for token, chains
from the connection's cache, generate: false, errors that keep the socket, frame limits."""
import json
import time

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from conftest import MODEL_NAME, Server
from responses_schema import check_stream, validate
from test_responses import sse_events

BODY = {"model": MODEL_NAME, "input": "Name three colors.", "max_output_tokens": 10,
        "temperature": 0}
FINAL = ("response.completed", "response.incomplete", "response.failed")


def ws_url(server):
    return f"ws://{server.host}:{server.port}/v1/responses"


def turn(ws, body):
    """Sends one response.create and reads its events up to the final one (or an error)."""
    ws.send(json.dumps({"type": "response.create", **body}))
    events = []
    while True:
        e = json.loads(ws.recv(timeout=60))
        events.append(e)
        if e["type"] in FINAL or e["type"] == "error":
            return events


def test_sdk_connect_gives_sse_events_token_for_token(server, client):
    with client.responses.connect() as conn:
        conn.response.create(**BODY)
        raw = []
        while True:
            e = json.loads(conn.recv_bytes())
            raw.append(e)
            if e["type"] in FINAL:
                break
        conn.response.create(**BODY)
        parsed = []
        for event in conn:
            parsed.append(event)
            if event.type in FINAL:
                break
    check_stream(raw)
    sse = sse_events(server, BODY)
    strip = lambda evs: [{k: v for k, v in e.items() if k not in ("response", "item_id", "item")}
                         for e in evs]
    assert strip(raw) == strip(sse)  # same events, same deltas, same order
    assert [e.type for e in parsed] == [e["type"] for e in raw]
    assert parsed[-1].response.output_text == raw[-1]["response"]["output"][0]["content"][0]["text"]


def test_store_false_chains_from_the_connection_only(server):
    with connect(ws_url(server)) as ws:
        first = turn(ws, {**BODY, "store": False})
        check_stream(first)
        rid = first[-1]["response"]["id"]
        second = turn(ws, {**BODY, "input": "And one more?", "previous_response_id": rid,
                           "store": False})
        check_stream(second)
        usage = second[-1]["response"]["usage"]
        assert usage["input_tokens_details"]["cached_tokens"] > 0
    with connect(ws_url(server)) as ws:
        err = turn(ws, {**BODY, "previous_response_id": rid})
        assert err[-1]["type"] == "error"
        validate(err[-1], "WebSocketErrorEvent")
        assert err[-1]["error"]["code"] == "previous_response_not_found"
        check_stream(turn(ws, BODY))  # the error did not close the socket


def test_generate_false_prepares_a_prompt_for_the_cache(server):
    with connect(ws_url(server)) as ws:
        prep = turn(ws, {**BODY, "input": "A long preamble about colors, shapes and sizes. " * 4,
                         "generate": False})
        assert prep[-1]["type"] == "response.completed"
        assert prep[-1]["response"]["output"] == []
        assert prep[-1]["response"]["usage"]["output_tokens"] == 0
        nxt = turn(ws, {**BODY, "previous_response_id": prep[-1]["response"]["id"]})
        check_stream(nxt)
        assert nxt[-1]["response"]["usage"]["input_tokens_details"]["cached_tokens"] > 0


def test_bad_frames_get_error_events_and_the_socket_stays_open(server):
    with connect(ws_url(server)) as ws:
        for frame, code in [("not json", "invalid_request_error"),
                            (b"\x00\x01binary", "invalid_request_error"),
                            (json.dumps({"type": "response.cancel"}), "invalid_request_error"),
                            (json.dumps({"input": "x"}), "invalid_request_error"),
                            (json.dumps({"type": "response.create", **BODY, "stream": True}),
                             "invalid_request_error"),
                            (json.dumps({"type": "response.create", **BODY, "temperature": "x"}),
                             "invalid_request_error")]:
            ws.send(frame)
            e = json.loads(ws.recv(timeout=30))
            assert e["type"] == "error" and e["status"] == 400, e
            validate(e, "WebSocketErrorEvent")
            assert e["error"]["type"] == code
        check_stream(turn(ws, BODY))
        pong = ws.ping()
        assert pong.wait(10)


def test_oversized_frame_closes_with_1009(server):
    with connect(ws_url(server), max_size=None) as ws:
        with pytest.raises(ConnectionClosed) as e:  # the close may come while still sending
            ws.send(json.dumps({"type": "response.create", **BODY, "input": "x" * (2 << 20)}))
            ws.recv(timeout=30)
        assert e.value.rcvd is not None and e.value.rcvd.code == 1009


def test_disconnect_mid_response_cancels(server, client):
    for _ in range(4):
        ws = connect(ws_url(server))
        ws.send(json.dumps({"type": "response.create", **BODY, "max_output_tokens": 1500,
                            "input": "Tell a very long story."}))
        while json.loads(ws.recv(timeout=60))["type"] != "response.output_text.delta":
            pass
        ws.close()
    t0 = time.monotonic()
    r = client.responses.create(model=MODEL_NAME, input="Hi", max_output_tokens=4)
    assert r.usage.output_tokens <= 4 and time.monotonic() - t0 < 20


def test_connection_limit_then_normal_close():
    s = Server(["--websocket-limit", "1", "--parallel", "2"])
    try:
        with connect(f"ws://{s.host}:{s.port}/v1/responses") as ws:
            e = json.loads(ws.recv(timeout=10))
            assert e["type"] == "error"
            assert e["error"]["code"] == "websocket_connection_limit_reached"
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd.code == 1000
        # Auth applies to the upgrade as to HTTP.
    finally:
        assert s.stop() == 0


def test_upgrade_needs_the_api_key():
    s = Server(["--api-key", "sekrit", "--parallel", "2"])
    try:
        with pytest.raises(Exception):
            connect(f"ws://{s.host}:{s.port}/v1/responses").recv(timeout=5)
        with connect(f"ws://{s.host}:{s.port}/v1/responses",
                     additional_headers={"Authorization": "Bearer sekrit"}) as ws:
            check_stream(turn(ws, {**BODY, "max_output_tokens": 2}))
        assert s.request("GET", "/v1/responses",
                         headers={"Authorization": "Bearer sekrit"})[0] == 426
    finally:
        assert s.stop() == 0
