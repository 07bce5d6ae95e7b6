"""The request and stream reader of each API serve_load drives with --api: Chat Completions,
Completions, Responses (SSE or, with --ws, WebSocket) and Anthropic Messages. Every API gets the
same one-message conversation with greedy decoding, so the server renders the same prompt and
generates the same tokens whichever API asks: their throughputs compare like for like."""
import http.client
import json
import threading
import time

from ws_client import WebSocket

APIS = ("chat", "completions", "responses", "messages")
_local = threading.local()  # each load thread's WebSocket, kept across its requests


def conversation(host, port, prefix, headers, ids):
    """The user message whose text the ids detokenize to, asked to be continued at length."""
    body = json.dumps({"tokens": ids})
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("POST", prefix + "/detokenize", body=body,
                 headers={**headers, "Content-Type": "application/json"})
    text = json.loads(conn.getresponse().read())["prompt"]
    conn.close()
    return [{"role": "user", "content": "Continue this text for as long as you can: " + text}]


def rendered_ids(host, port, prefix, headers, messages):
    """The prompt ids the chat template renders, for Completions to send as its prompt."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("POST", prefix + "/tokenize", body=json.dumps({"messages": messages}),
                 headers={**headers, "Content-Type": "application/json"})
    ids = json.loads(conn.getresponse().read())["tokens"]
    conn.close()
    return ids


def request(api, model, prompt, gen):
    """(path, body) of one streamed request; prompt is messages, or ids for completions."""
    if api == "completions":
        return "/completions", {"model": model, "prompt": prompt, "max_tokens": gen,
                                "temperature": 0, "stream": True,
                                "stream_options": {"include_usage": True}}
    if api == "chat":
        return "/chat/completions", {"model": model, "messages": prompt, "max_tokens": gen,
                                     "temperature": 0, "stream": True,
                                     "stream_options": {"include_usage": True}}
    if api == "responses":
        return "/responses", {"model": model, "input": prompt, "max_output_tokens": gen,
                              "temperature": 0, "store": False, "stream": True}
    return "/messages", {"model": model, "messages": prompt, "max_tokens": gen,
                         "temperature": 0, "stream": True}


def read_event(api, ev, res, now):
    """Takes one decoded event into res (token times, usage); True once the reply is over."""
    t = ev.get("type", "")
    if "error" in ev and t in ("", "error"):
        raise ValueError((ev["error"] or {}).get("message", "error event"))
    if api in ("chat", "completions"):
        if ev.get("usage"):
            res.output_tokens = ev["usage"]["completion_tokens"]
            res.prompt_tokens = ev["usage"]["prompt_tokens"]
        for c in ev.get("choices", []):
            if (c.get("delta") or {}).get("content") or c.get("text"):
                res.token_times.append(now)
        return False
    if api == "responses":
        if t == "response.output_text.delta" and ev["delta"]:
            res.token_times.append(now)
        if t in ("response.completed", "response.incomplete", "response.failed"):
            if t == "response.failed":
                raise ValueError(ev["response"]["error"]["message"])
            u = ev["response"]["usage"]
            res.output_tokens, res.prompt_tokens = u["output_tokens"], u["input_tokens"]
            return True
        return False
    if t == "message_start":
        res.prompt_tokens = ev["message"]["usage"]["input_tokens"]
    elif t == "content_block_delta" and ev["delta"].get("text"):
        res.token_times.append(now)
    elif t == "message_delta":
        res.output_tokens = ev["usage"]["output_tokens"]
    return t == "message_stop"


def one_http(host, port, prefix, headers, api, model, prompt, gen, res):
    path, body = request(api, model, prompt, gen)
    conn = http.client.HTTPConnection(host, port, timeout=600)
    res.start = time.perf_counter()
    try:
        conn.request("POST", prefix + path, body=json.dumps(body),
                     headers={**headers, "Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            res.error = f"HTTP {resp.status}: {resp.read()[:200]!r}"
            return
        for raw in resp:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]" or read_event(api, json.loads(data), res,
                                                 time.perf_counter()):
                break
        finish(res)
    except (OSError, http.client.HTTPException, ValueError) as e:
        res.error = repr(e)
    finally:
        conn.close()


def one_ws(host, port, prefix, headers, model, prompt, gen, res):
    """One response.create on this thread's socket (opened on its first request)."""
    _, body = request("responses", model, prompt, gen)
    del body["stream"]
    try:
        if getattr(_local, "ws", None) is None:
            _local.ws = WebSocket(f"ws://{host}:{port}{prefix}/responses", headers)
        res.start = time.perf_counter()
        _local.ws.send(json.dumps({"type": "response.create", **body}))
        while not read_event("responses", json.loads(_local.ws.recv()), res,
                             time.perf_counter()):
            pass
        finish(res)
    except (OSError, ValueError) as e:
        res.error = repr(e)
        _local.ws = None


def finish(res):
    res.end = time.perf_counter()
    res.first = res.token_times[0] if res.token_times else res.end
    res.ok = True


def close_thread_socket():
    if getattr(_local, "ws", None) is not None:
        _local.ws.close()
        _local.ws = None
